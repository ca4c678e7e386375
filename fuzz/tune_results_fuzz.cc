// Fuzz target: any bytes as a `gpuscope tune` results file (src/tune/results.h) → ReadResults
// must return records and skipped lines, never crash. Every string read must be clean (the
// sanitiser), every record must write and read back as the same record (the resume key and the
// numbers), and the tune document built from the records must pass every view's checks
// (fuzz/checks.h: terminal text, JSON read back as written, HTML). Seeds: fuzz/seeds/tune.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/sanitize.h"
#include "checks.h"
#include "tune/results.h"
#include "tune/tune.h"

namespace {

using namespace gpuscope;
using namespace gpuscope::tune;

void CheckClean(const std::string& s) {
  if (NeedsSanitizing(s)) fuzz::Fail("a string read is not sanitised");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ResultsFile file = ReadResults(text, "fuzz.jsonl");
  TuneResult result;
  for (const TrialRecord& r : file.records) {
    for (const std::string& a : r.command) CheckClean(a);
    for (const auto& [k, v] : r.params) CheckClean(k), CheckClean(v);
    CheckClean(r.metric);
    CheckClean(r.outcome);
    CheckClean(r.note);
    CheckClean(r.oom_framework);
    CheckClean(r.unit);
    auto back = ParseTrialRecord(TrialRecordJson(r));
    if (!back.ok()) fuzz::Fail("a record does not read back: %s", back.status().message().c_str());
    if (!SameTrial(r, *back) || back->outcome != r.outcome || back->samples != r.samples ||
        (HasThroughput(r.outcome) && back->throughput != r.throughput) || back->note != r.note ||
        back->gpu_mem_peak_bytes != r.gpu_mem_peak_bytes)
      fuzz::Fail("a record reads back different");
    result.trials.push_back(r);
    result.resumed.push_back(true);
  }
  for (const std::string& s : file.skipped) CheckClean(s);
  // A document over the records as a resumed search would show them: params from the first.
  if (!result.trials.empty()) {
    const TrialRecord& first = result.trials.front();
    result.options.command = first.command;
    for (const auto& [name, value] : first.params) {
      Param p;
      p.name = name;
      p.values = {value};
      result.options.params.push_back(p);
    }
    result.search.first = first.params;
    result.search.best = result.trials.back().params;
    result.search.have_best = result.search.best.size() == first.params.size();
    for (const auto& [name, value] : result.search.best)
      if (!first.params.count(name)) result.search.have_best = false;
  }
  result.skipped_lines = file.skipped;
  Summarise(&result);
  fuzz::CheckDocument(BuildTuneDocument(result));
  return 0;
}
