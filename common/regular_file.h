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

// The whole of a regular file of at most max_bytes (larger: InputError(path, "is N bytes, too
// large for <what> (max M)")). A file that changes size while it is read is an InputError too.
std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what);

}  // namespace ordo
