#include "common/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>

#include <ordo/errors.h>

namespace ordo {

namespace {

// The live temporary names, read by the signal handler. A slot is claimed (kClaimed) by one
// thread, filled, then published (kFile or kDirectory); the handler reads only published slots.
// Lock-free atomics and plain char arrays are what a handler may touch.
enum : int { kFree = 0, kClaimed = 1, kFile = 2, kDirectory = 3 };
constexpr int kSlots = 32;
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
Slot g_slots[kSlots];
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler reads these");

// A signal that arrives while SignalsDeferred lives waits here for its destructor.
std::atomic<int> g_defer{0}, g_pending{0};

extern "C" void remove_temporaries_and_reraise(int sig) {
  const int saved = errno;
  if (g_defer.load(std::memory_order_acquire) > 0) {
    g_pending.store(sig, std::memory_order_release);
    return;
  }
  for (Slot& s : g_slots)  // files first: a directory must be empty to go
    if (s.state.load(std::memory_order_acquire) == kFile) ::unlink(s.path);
  for (int i = kSlots - 1; i >= 0; --i)  // the directory made last (inside the others) first
    if (g_slots[i].state.load(std::memory_order_acquire) == kDirectory) ::rmdir(g_slots[i].path);
  // The default action, raised again: it is delivered when this handler returns (the signal is
  // blocked while it runs), and the parent sees the process ended by `sig`.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
  errno = saved;
}

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw InputError(path, "cannot write: " + why);
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Whether `path`, or a link on the way to its file, is a name of an open descriptor: an entry
// of /proc/<pid>/fd (reached as /dev/stdout, /dev/fd/N or /proc/self/fd/N). Renaming over it would
// replace a name in /dev, or write a file the descriptor no longer refers to.
bool names_a_descriptor(std::string path) {
  for (int hop = 0; hop < 40; ++hop) {
    const std::string dir = parent_of(path);
    char buf[PATH_MAX];
    if (::realpath(dir.c_str(), buf) && std::strncmp(buf, "/proc/", 6) == 0) return true;
    const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
    if (n <= 0) return false;
    const std::string target(buf, size_t(n));
    path = target[0] == '/' ? target : dir + "/" + target;
  }
  return false;
}

// The bytes go straight into what `path` is (a device, a FIFO, a descriptor's file). There is no
// temporary to remove: what the device or reader took is taken.
void write_directly(const std::string& path, bool regular, const std::function<void(std::FILE* f)>& write) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | (regular ? O_TRUNC : 0));
  if (fd < 0) fail(path, std::strerror(errno));
  std::FILE* f = ::fdopen(fd, "wb");
  if (!f) {
    const int err = errno;
    ::close(fd);
    fail(path, std::strerror(err));
  }
  try {
    errno = 0;
    write(f);
    if (std::fflush(f) != 0 || std::ferror(f)) fail(path, std::strerror(errno ? errno : EIO));
  } catch (...) {
    std::fclose(f);
    throw;
  }
  if (std::fclose(f) != 0) fail(path, std::strerror(errno));
}

// The temporary's name beside `path`: "<name>.tmp-XXXXXX", or, when that would pass the longest name
// a directory entry may have (NAME_MAX, 255 bytes on Linux), the name's first bytes in its place
// (".<first bytes>.tmp-XXXXXX"): it is renamed over `path` in the end, so only its directory matters.
std::string temporary_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const std::string suffix = ".tmp-XXXXXX";
  if (path.size() - base + suffix.size() <= NAME_MAX) return path + suffix;
  return path.substr(0, base) + "." + path.substr(base, NAME_MAX - suffix.size() - 1) + suffix;
}

void write_through_temporary(const std::string& path, const std::function<void(std::FILE* f)>& write) {
  std::string tmp = temporary_name(path);
  std::optional<TemporaryName> live;
  int fd;
  {
    const SignalsDeferred created_and_recorded;  // no signal between the two
    fd = ::mkstemp(tmp.data());
    if (fd >= 0) live.emplace(tmp);
  }
  if (fd < 0) fail(path, std::strerror(errno));
  std::FILE* f = ::fdopen(fd, "wb");
  if (!f) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(path, std::strerror(err));
  }
  try {
    // mkstemp makes the file private (0600); give it the mode a plain create would (0666 & ~umask).
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::fchmod(fd, 0666 & ~mask) != 0) fail(path, std::strerror(errno));
    errno = 0;
    write(f);
    if (std::fflush(f) != 0 || std::ferror(f)) fail(path, std::strerror(errno ? errno : EIO));
    if (::fsync(fd) != 0) fail(path, std::strerror(errno));
  } catch (...) {
    std::fclose(f);
    ::unlink(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, std::strerror(err));
  }
}

}  // namespace

void write_atomically(const std::string& path, const std::function<void(std::FILE* f)>& write) {
  struct stat link {
  }, st{};
  if (::lstat(path.c_str(), &link) != 0 || ::stat(path.c_str(), &st) != 0 || S_ISDIR(st.st_mode))
    return write_through_temporary(path, write);  // a new name (or a dangling link); a directory fails the rename
  if (S_ISBLK(st.st_mode)) fail(path, "it is a block device (a disk), which ordo does not write onto");
  if (S_ISSOCK(st.st_mode)) fail(path, "it is a socket");
  const bool regular = S_ISREG(st.st_mode);
  if (!regular || names_a_descriptor(path)) return write_directly(path, regular, write);
  if (!S_ISLNK(link.st_mode)) return write_through_temporary(path, write);
  // A link to a regular file: the file it names is replaced, and the link stays.
  char target[PATH_MAX];
  if (!::realpath(path.c_str(), target)) fail(path, std::strerror(errno));
  write_through_temporary(target, write);
}

TemporaryName::TemporaryName(const std::string& path, bool directory) : slot_(-1) {
  if (path.size() >= PATH_MAX) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kClaimed, std::memory_order_acquire)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(directory ? kDirectory : kFile, std::memory_order_release);
    slot_ = i;
    return;
  }
}

TemporaryName::~TemporaryName() {
  if (slot_ >= 0) g_slots[slot_].state.store(kFree, std::memory_order_release);
}

SignalsDeferred::SignalsDeferred() {
  g_defer.fetch_add(1, std::memory_order_acq_rel);
}

SignalsDeferred::~SignalsDeferred() {
  if (g_defer.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    const int sig = g_pending.exchange(0, std::memory_order_acq_rel);
    if (sig != 0) remove_temporaries_and_reraise(sig);
  }
}

void remove_temporaries_on_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_temporaries_and_reraise;
    sigfillset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace ordo
