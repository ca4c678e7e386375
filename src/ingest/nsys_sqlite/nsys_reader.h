// Nsight Systems SQLite exports (`nsys export --type sqlite report.nsys-rep`) → the same Trace the
// Kineto reader builds (docs/nsys.md):
//
//   CUPTI_ACTIVITY_KIND_KERNEL / MEMCPY / MEMSET / SYNCHRONIZATION → Trace::gpu
//   CUPTI_ACTIVITY_KIND_RUNTIME (runtime and driver API)          → Trace::runtime (linked to the
//                                                                    GPU rows by correlationId)
//   NVTX_EVENTS ranges                                            → Trace::cpu (user annotations;
//                                                                    ProfilerStep#N are steps)
//   TARGET_INFO_GPU (+ TARGET_INFO_CUDA_DEVICE)                   → Trace::devices
//
// Export schemas 2.9 (EXPORT_META_DATA) to 3.23 (META_DATA_EXPORT) are known; columns are looked
// up by name (PRAGMA table_info), so a newer schema reads what it can and says so. Tables that were
// not captured are named in TraceInfo::notes with the `nsys profile` flag that captures them; an
// export with neither kernels nor copies is an error ("no GPU activity captured").
//
// SQLite needs a file: a regular file is opened read-only in place (URI mode=ro&immutable=1);
// anything else (stdin, a pipe, a gzip file, bytes in memory) is read into memory, at most
// kMaxNsysBytesInMemory, and opened with sqlite3_deserialize. No temporary file is written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gpuscope/ingest.h"
#include "io/byte_source.h"

namespace gpuscope::ingest {

// The most bytes of an export read into memory when it does not come as a regular file.
inline constexpr uint64_t kMaxNsysBytesInMemory = uint64_t{2} << 30;

// The 16-byte SQLite header ("SQLite format 3\0").
bool LooksLikeSqlite(std::string_view head);

Result<Trace> ReadNsysSqlite(io::ByteSource& source, const std::string& name, uint64_t file_bytes,
                             const LoadOptions& options);

// True when `path` is a regular file holding an SQLite database whose schema has the tables of an
// Nsight Systems export (the CLI sends it to the registry rather than to the summary reader, which
// takes every other SQLite file).
bool IsNsysExportFile(const std::string& path);

}  // namespace gpuscope::ingest
