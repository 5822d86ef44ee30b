// The thread-count variables of the libraries below ordo, checked before they load (<ordo/ordo.h>).
// Plain C: this runs before the C++ runtime and every shared library is initialized.
#include <cstdio>
#include <cstring>

#include "ordo/ordo.h"

namespace ordo {

namespace {

constexpr const char* kVariables[] = {"OMP_NUM_THREADS", "OMP_THREAD_LIMIT", "OPENBLAS_NUM_THREADS",
                                      "GOTO_NUM_THREADS"};

bool space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// One whole number from 1, optionally signed "+", spaces around it: what libgomp accepts.
bool count(const char* s, const char* end) {
  while (s < end && space(*s)) ++s;
  while (end > s && space(end[-1])) --end;
  if (s < end && *s == '+') ++s;
  if (s == end) return false;
  bool nonzero = false;
  for (; s < end; ++s) {
    if (*s < '0' || *s > '9') return false;
    nonzero = nonzero || *s != '0';
  }
  return nonzero;
}

bool good(const char* name, const char* value) {
  const bool list = std::strcmp(name, "OMP_NUM_THREADS") == 0;     // "4,2": one count per nesting level
  if (!*value && std::strncmp(name, "OMP_", 4) != 0) return true;  // OpenBLAS reads "" as unset; libgomp warns
  const char* end = value + std::strlen(value);
  for (const char* item = value;;) {
    const char* comma = list ? static_cast<const char*>(std::memchr(item, ',', size_t(end - item))) : nullptr;
    if (!count(item, comma ? comma : end)) return false;
    if (!comma) return true;
    item = comma + 1;
  }
}

}  // namespace

const char* bad_thread_variable(char* const* envp) {
  for (; envp && *envp; ++envp) {
    for (const char* name : kVariables) {
      const size_t n = std::strlen(name);
      if (std::strncmp(*envp, name, n) == 0 && (*envp)[n] == '=' && !good(name, *envp + n + 1)) return *envp;
    }
  }
  return nullptr;
}

void thread_variable_message(const char* entry, char* buf, unsigned long n) {
  const bool list = std::strncmp(entry, "OMP_NUM_THREADS=", 16) == 0;
  std::snprintf(buf, n, "error: %.60s: must be %s (or unset it)", entry,
                list ? "a whole number from 1, or a list of them such as 4,2" : "a whole number from 1");
}

}  // namespace ordo
