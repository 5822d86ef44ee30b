#include "common/memory.h"

#include <unistd.h>

namespace ordo {

uint64_t machine_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(8) << 30;
}

}  // namespace ordo
