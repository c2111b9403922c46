#include "common/assert.h"

#include <cstdio>
#include <cstdlib>

namespace sightline::internal {

void DCheckFailed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, expr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace sightline::internal
