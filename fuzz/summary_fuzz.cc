// Fuzz target: any bytes → store::DeserializeSummaries (the reader of summary files and of the
// bytes MPI sends, src/store/) → the job document of what it read. A summary that reads must hold
// only safe text, survive another write and read unchanged, and give a document every view of
// which passes fuzz/checks.h; one that does not read must say why, naming the input. Seeds
// (fuzz/run.sh): summaries `gpuscope map` writes for the examples and small synthetic ranks,
// and copies of them cut short or with damaged pages.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/sanitize.h"
#include "checks.h"
#include "report/summary.h"
#include "store/summary_file.h"

namespace {

void CheckSafe(const std::string& text, const char* what) {
  if (gpuscope::NeedsSanitizing(text))
    gpuscope::fuzz::Fail("unsafe text in %s read from a summary", what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto ranks = store::DeserializeSummaries(bytes, "fuzz.db");
  if (!ranks.ok()) {
    if (ranks.status().message().rfind("fuzz.db", 0) != 0)
      fuzz::Fail("an error that does not name the input: %s", ranks.status().message().c_str());
    return 0;
  }
  for (const report::RankSummary& r : *ranks) {
    const model::RankIdentity& id = r.facts.identity;
    for (const std::string* s :
         {&id.path, &id.backend, &id.device_name, &id.hostname, &r.facts.verdict})
      CheckSafe(*s, "the identity");
    for (const std::string& pg : id.process_groups) CheckSafe(pg, "a process group");
    for (const model::CollectiveRecord& c : r.facts.collectives) {
      for (const std::string* s : {&c.group, &c.group_desc, &c.group_ranks, &c.type, &c.dtype})
        CheckSafe(*s, "a collective");
      if (c.end_ns < c.start_ns) fuzz::Fail("a collective that ends before it starts");
    }
    if (r.facts.busy.busy_ns.size() > model::kMaxBusyBins) fuzz::Fail("too many busy bins");
  }
  // What was read writes and reads back the same.
  auto again = store::SerializeSummaries(*ranks);
  if (!again.ok()) fuzz::Fail("cannot write what was read: %s", again.status().message().c_str());
  auto back = store::DeserializeSummaries(*again, "again.db");
  if (!back.ok()) fuzz::Fail("cannot read what was written: %s", back.status().message().c_str());
  if (back->size() != ranks->size()) fuzz::Fail("a second write and read changed the rank count");
  for (size_t i = 0; i < ranks->size(); ++i) {
    const report::RankSummary& a = (*ranks)[i];
    const report::RankSummary& b = (*back)[i];
    if (!(a.facts == b.facts)) fuzz::Fail("rank %zu: a second write and read changed its facts", i);
    if (!(a.section == b.section))
      fuzz::Fail("rank %zu: a second write and read changed its section at %s", i,
                 fuzz::SectionDifference({a.section}, {b.section}).c_str());
  }
  fuzz::CheckDocument(report::BuildJobDocument(*ranks, {}));
  return 0;
}
