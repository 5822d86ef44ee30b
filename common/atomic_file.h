// ordo: writing a file whole or not at all, the one way every writer in ordo does it.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

namespace ordo {

// Writes `path` atomically. write(f) puts the bytes into a new temporary file in the same
// directory, named `path` + ".tmp-XXXXXX" by mkstemp (for a name within 11 bytes of NAME_MAX, a
// shorter name from its first bytes, ".<start>.tmp-XXXXXX"): created with O_EXCL under a name no other
// file has, so a stale or planted file or link is never followed or overwritten. The file is then
// flushed to disk (fsync), closed with the result checked, and renamed over `path`.
// On any failure (write throws, or a write, the flush, the close or the rename fails) the temporary
// file is removed and `path` is left as it was; the error is InputError(path, "cannot write: <why>"),
// or what write threw.
//
// Write-then-rename is for regular files and new names only. A `path` that is a character device
// or a FIFO (/dev/null, a named pipe) is opened and written directly, since renaming a file over it
// would destroy the device; so is a name of an open descriptor (/dev/stdout, /dev/fd/N,
// /proc/self/fd/N), whatever it points to. A symbolic link to a regular file stays a link: its
// target is replaced whole. A block device or a socket is refused by name.
void write_atomically(const std::string& path, const std::function<void(std::FILE* f)>& write);

// A name to remove if the process is ended by a signal while this object lives: a temporary file
// (or, with `directory`, an empty temporary directory, removed after the files). The names are
// kept in a fixed table a signal handler can read; beyond its 32 places a name is not recorded.
class TemporaryName {
 public:
  explicit TemporaryName(const std::string& path, bool directory = false);
  ~TemporaryName();
  TemporaryName(const TemporaryName&) = delete;
  TemporaryName& operator=(const TemporaryName&) = delete;

 private:
  int slot_;
};

// While one lives, a signal remove_temporaries_on_signals() handles waits: the steps between (a
// set of renames) are done whole, and the signal then takes effect when the last one goes.
class SignalsDeferred {
 public:
  SignalsDeferred();
  ~SignalsDeferred();
  SignalsDeferred(const SignalsDeferred&) = delete;
  SignalsDeferred& operator=(const SignalsDeferred&) = delete;
};

// Makes SIGINT, SIGTERM and SIGHUP remove every live TemporaryName and then end the process by the
// same signal (the default action, so the parent sees what killed it). A signal the process was
// started ignoring stays ignored (nohup). Called once by the command line: a library leaves its
// host's signals alone.
void remove_temporaries_on_signals();

}  // namespace ordo
