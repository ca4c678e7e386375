// CONTRACT STUB (job-contract branch): replaced by the map-reduce branch.
#include "store/summary_file.h"

namespace gpuscope::store {

Status WriteSummaryFile(const std::string&, const std::vector<report::RankSummary>&) {
  return Status::Ok();
}
Result<std::vector<report::RankSummary>> ReadSummaryFile(const std::string&) {
  return std::vector<report::RankSummary>{};
}
Result<std::string> SerializeSummaries(const std::vector<report::RankSummary>&) {
  return std::string();
}
Result<std::vector<report::RankSummary>> DeserializeSummaries(const std::string&,
                                                              const std::string&) {
  return std::vector<report::RankSummary>{};
}
bool LooksLikeSummaryFile(std::string_view) { return false; }

}  // namespace gpuscope::store
