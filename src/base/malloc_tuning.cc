#include "base/malloc_tuning.h"

#include <malloc.h>

namespace gpuscope {

void TuneMalloc() {
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

}  // namespace gpuscope
