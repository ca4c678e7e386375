// Fuzz target: bytes of an SQLite database → the Nsight Systems export reader
// (src/ingest/nsys_sqlite) through the input registry → report → text, JSON, HTML. A damaged page,
// a foreign schema, NULLs and text where integers belong, end before start, huge grids: a Trace or
// a Status with a message naming the input, never a crash, and every analysis invariant holds.
// Byte 0, bit 0: read the bytes from a file (opened in place, read-only and immutable) instead of
// from memory (sqlite3_deserialize). Seeds: small exports cut down from shared/traces/nsys
// (fuzz/run.sh).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "analyze/invariants.h"
#include "checks.h"
#include "ingest/registry.h"
#include "report/document.h"
#include "report/report.h"

namespace {

std::string TempFile() {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/nsys_sqlite_fuzz." + std::to_string(getpid()) +
         ".sqlite";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope;
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Only SQLite databases: anything else belongs to the other readers' targets.
  if (bytes.substr(0, 16) != std::string_view("SQLite format 3\0", 16)) return 0;
  LoadOptions options;
  options.threads = 1;
  Result<ingest::Input> in = Status::Ok();
  std::string name = "fuzz.sqlite";
  if (data[0] & 1) {
    static const std::string path = TempFile();
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return 0;
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    name = path;
    in = ingest::ReadInput(path, options);
    std::remove(path.c_str());
  } else {
    in = ingest::ReadInputFromBytes(bytes, name, options);
  }
  if (!in.ok()) {
    const std::string& m = in.status().message();
    if (m.rfind(name + ": ", 0) != 0) fuzz::Fail("error without the input's name: %s", m.c_str());
    return 0;
  }
  if (in->kind != ingest::ModelKind::kTrace || !in->trace) fuzz::Fail("no trace");
  const Trace& t = *in->trace;
  fuzz::CheckColumnsAligned(t);
  for (size_t i = 0; i < t.gpu.size(); ++i)
    if (t.gpu.dur_ns[i] < 0) fuzz::Fail("GPU row %zu with a negative duration", i);
  for (size_t i = 0; i < t.runtime.size(); ++i)
    if (t.runtime.dur_ns[i] < 0) fuzz::Fail("runtime row %zu with a negative duration", i);
  for (size_t i = 0; i < t.cpu.size(); ++i)
    if (t.cpu.dur_ns[i] < 0) fuzz::Fail("NVTX row %zu with a negative duration", i);
  std::vector<Trace> traces;
  traces.push_back(std::move(*in->trace));
  const auto report = report::BuildReport(traces, {}, 1);
  for (const report::RankReport& r : report.ranks) {
    fuzz::CheckInvariantsHold(r);
  }
  fuzz::CheckDocument(report::BuildDocument(report));
  return 0;
}
