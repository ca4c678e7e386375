// "Count the bad line and go on": one shape for every line-based reader (nvidia-smi, DCGM, run
// recordings). A malformed line is counted on the recording and the first few are quoted as
// "FILE:LINE: why" (the report says how many were skipped and shows them); a last line the writer
// was stopped in the middle of is taken back: the file was cut, not wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "base/sanitize.h"
#include "model/monitor_samples.h"

namespace gpuscope::ingest {

class MalformedLines {
 public:
  static constexpr size_t kExamples = 3;  // quoted in the report; the rest only counted

  MalformedLines(monitor::Recording* rec, std::string path) : rec_(rec), path_(std::move(path)) {}

  void Count(uint64_t line, std::string_view why) {
    ++rec_->malformed_lines;
    if (rec_->malformed_examples.size() < kExamples)
      rec_->malformed_examples.push_back(path_ + ":" + std::to_string(line) + ": " +
                                         SanitizeText(why));
  }

  // What was counted up to now, to take back later.
  struct Mark {
    uint64_t lines = 0;
    size_t examples = 0;
  };
  Mark Checkpoint() const { return {rec_->malformed_lines, rec_->malformed_examples.size()}; }
  // The line read since `mark` was cut mid-write: whatever it counted is taken back. True when
  // it had counted something (the caller notes the cut).
  bool TakeBackCut(const Mark& mark) {
    if (rec_->malformed_lines <= mark.lines) return false;
    rec_->malformed_lines = mark.lines;
    rec_->malformed_examples.resize(mark.examples);
    return true;
  }

 private:
  monitor::Recording* rec_;
  std::string path_;
};

}  // namespace gpuscope::ingest
