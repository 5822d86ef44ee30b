// ordo: writing a file whole or not at all, the one way every writer in ordo does it.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

namespace ordo {

// Writes `path` atomically. write(f) puts the bytes into a new temporary file in the same
// directory, named `path` + ".tmp-XXXXXX" by mkstemp: created with O_EXCL under a name no other
// file has, so a stale or planted file or link is never followed or overwritten. The file is then
// flushed to disk (fsync), closed with the result checked, and renamed over `path`.
// On any failure (write throws, or a write, the flush, the close or the rename fails) the temporary
// file is removed and `path` is left as it was; the error is InputError(path, "cannot write: <why>"),
// or what write threw.
void write_atomically(const std::string& path, const std::function<void(std::FILE* f)>& write);

}  // namespace ordo
