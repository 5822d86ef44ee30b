#include "common/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <ordo/errors.h>

namespace ordo {

void write_atomically(const std::string& path, const std::function<void(std::FILE* f)>& write) {
  auto fail = [&](const std::string& why) { throw InputError(path, "cannot write: " + why); };
  std::string tmp = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) fail(std::strerror(errno));
  std::FILE* f = ::fdopen(fd, "wb");
  if (!f) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(std::strerror(err));
  }
  try {
    // mkstemp makes the file private (0600); give it the mode a plain create would (0666 & ~umask).
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::fchmod(fd, 0666 & ~mask) != 0) fail(std::strerror(errno));
    write(f);
    if (std::fflush(f) != 0 || std::ferror(f)) fail(std::strerror(errno ? errno : EIO));
    if (::fsync(fd) != 0) fail(std::strerror(errno));
  } catch (...) {
    std::fclose(f);
    ::unlink(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(std::strerror(err));
  }
}

}  // namespace ordo
