// ordo: opening a stranger's file for reading only when it is a regular file.
#pragma once

#include <cstdint>
#include <string>

namespace ordo {

// Opens `path` read-only if it is a regular file, and returns the descriptor (the caller closes
// it) and its size. The open itself never waits: it is made with O_NONBLOCK, so a FIFO with no
// writer or a device cannot hang it, and the type is then checked on the open descriptor (fstat),
// so the file checked is the file read. Throws InputError(path, ...): "cannot open: <why>", or
// "not a regular file (a FIFO)" and the like.
int open_regular_file(const std::string& path, uint64_t* size);

// Whether anything is at `path` (a file, a directory, ...): a model directory's optional files.
bool path_exists(const std::string& path);

// The whole of a regular file of at most max_bytes (larger: InputError(path, "is N bytes, too
// large for <what> (max M)")). A file that changes size while it is read is an InputError too.
std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what);

// The whole of a file that is read once from its start (a config given on the command line): a
// regular file as read_regular_file reads it, or a pipe (a FIFO, a process substitution <(...))
// or a character device read to its end, with the same cap of max_bytes. A directory, socket or
// block device is InputError(path, "not a regular file or a pipe (a directory)").
std::string read_file_or_pipe(const std::string& path, uint64_t max_bytes, const std::string& what);

}  // namespace ordo
