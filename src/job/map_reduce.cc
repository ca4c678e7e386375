// CONTRACT STUB (job-contract branch): replaced by the map-reduce branch.
#include "job/map_reduce.h"

namespace gpuscope::job {

Result<report::RankSummary> MapTrace(const std::string&, const MapOptions&, ThreadPool&) {
  return report::RankSummary{};
}
Mapped MapTraces(const std::vector<std::string>&, const MapOptions&, ThreadPool&) { return {}; }
Result<Mapped> ReadSummaries(const std::vector<std::string>&, const MapOptions&, ThreadPool&) {
  return Mapped{};
}

}  // namespace gpuscope::job
