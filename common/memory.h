// ordo: how much memory this machine has, the one query every size limit in ordo is taken from.
#pragma once

#include <cstdint>

namespace ordo {

// Physical memory in bytes (pages × page size); 8 GiB where the system does not say.
uint64_t machine_memory_bytes();

}  // namespace ordo
