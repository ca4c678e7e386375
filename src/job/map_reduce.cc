// CONTRACT STUB (job-contract branch): replaced by the map-reduce branch.
#include "job/map_reduce.h"

#include <algorithm>
#include <climits>
#include <utility>

namespace gpuscope::job {

Result<report::RankSummary> MapTrace(const std::string&, const MapOptions&, ThreadPool&) {
  return report::RankSummary{};
}
void SortMapped(Mapped* mapped) {
  std::stable_sort(mapped->ranks.begin(), mapped->ranks.end(),
                   [](const report::RankSummary& a, const report::RankSummary& b) {
                     const auto key = [](const report::RankSummary& s) {
                       const int32_t r = s.facts.identity.rank;
                       return std::make_pair(r < 0 ? INT32_MAX : r, s.facts.identity.path);
                     };
                     return key(a) < key(b);
                   });
}

Mapped MapTraces(const std::vector<std::string>&, const MapOptions&, ThreadPool&) { return {}; }
Result<Mapped> ReadSummaries(const std::vector<std::string>&, const MapOptions&, ThreadPool&) {
  return Mapped{};
}

}  // namespace gpuscope::job
