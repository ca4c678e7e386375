// CONTRACT VERSION (job-contract branch): the rank sections and the failures, as BuildDocument
// prints them without the across-ranks section. The job-report branch adds the job summary.
#include <set>

#include "gpuscope/version.h"
#include "report/summary.h"

namespace gpuscope::report {

render::Document BuildJobDocument(const std::vector<RankSummary>& ranks,
                                  const std::vector<Status>& failures, const JobOptions&) {
  render::Document doc;
  doc.schema = "gpuscope.report";
  doc.title = "gpuscope " GPUSCOPE_VERSION " · " + std::to_string(ranks.size()) + " rank" +
              (ranks.size() == 1 ? "" : "s");
  std::set<std::string> keys;
  for (size_t i = 0; i < ranks.size(); ++i) {
    render::Section s = ranks[i].section;
    if (!keys.insert(s.key).second) s.key = "input_" + std::to_string(i);
    keys.insert(s.key);
    doc.sections.push_back(std::move(s));
  }
  if (!failures.empty()) {
    render::Section& f = doc.AddSection("failures", "inputs that could not be read");
    for (size_t i = 0; i < failures.size(); ++i)
      f.AddText("failure_" + std::to_string(i), "error: " + failures[i].message());
  }
  return doc;
}

}  // namespace gpuscope::report
