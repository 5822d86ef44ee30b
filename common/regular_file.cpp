#include "common/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <ordo/errors.h>

namespace ordo {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

}  // namespace

int open_regular_file(const std::string& path, uint64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw InputError(path, std::string("cannot open: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path, std::string("not a regular file (") + kind_of(st.st_mode) + ")");
  }
  // Reads of a regular file do not block anyway; clear the flag so they behave as usual.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *size = uint64_t(st.st_size);
  return fd;
}

std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, &size);
  std::string bytes;
  try {
    if (size > max_bytes)
      throw InputError(path, "is " + std::to_string(size) + " bytes, too large for " + what + " (max " +
                                 std::to_string(max_bytes) + ")");
    bytes.resize(size_t(size));
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw InputError(path, std::string("cannot read: ") + std::strerror(errno));
      if (n == 0) throw InputError(path, "became shorter while it was read (changed by another program?)");
      done += size_t(n);
    }
    char extra;
    if (::read(fd, &extra, 1) > 0) throw InputError(path, "grew while it was read (changed by another program?)");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return bytes;
}

std::string read_file_or_pipe(const std::string& path, uint64_t max_bytes, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISREG(st.st_mode)) {
    ::close(fd);
    return read_regular_file(path, max_bytes, what);
  }
  if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
    ::close(fd);
    throw InputError(path, std::string("not a regular file or a pipe (") + kind_of(st.st_mode) + ")");
  }
  // A pipe's writer is there (a process substitution) or comes; reads wait for it as usual.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::string bytes;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(path, std::string("cannot read: ") + std::strerror(err));
    }
    if (n == 0) break;
    if (bytes.size() + size_t(n) > max_bytes) {
      ::close(fd);
      throw InputError(path, "holds more than " + std::to_string(max_bytes) + " bytes, too large for " + what +
                                 " (max " + std::to_string(max_bytes) + ")");
    }
    bytes.append(buf, size_t(n));
  }
  ::close(fd);
  return bytes;
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace ordo
