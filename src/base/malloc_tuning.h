// The allocator settings of the program (the `gpuscope` binary and the benchmarks that measure it).
#pragma once

namespace gpuscope {

// glibc's defaults give each allocation above 128 KiB (up to 32 MiB once its threshold has
// adapted) a mapping of its own, unmapped when freed, trim the heap's top past 128 KiB, and give
// each thread an arena: the parse batches' tables and the analyses' vectors, freed and made
// again, came back as fresh zero-filled pages every time. One arena, mappings from 32 MiB (what
// the adaptive threshold reaches anyway) and the top kept up to 64 MiB: on the generated 1 GB
// trace (234 MB model) 143k → 95k minor faults, peak RSS unchanged; larger caps saved a few
// faults more but kept the doubling buffers of one huge element, breaking the memory bound the
// gzip-bomb test holds us to (tests/ingest_registry_test.cc). Call once, first thing in main().
void TuneMalloc();

}  // namespace gpuscope
