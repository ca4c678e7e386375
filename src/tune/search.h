// The search of `gpuscope tune`, as the optimisation guides prescribe it, over an objective that
// runs a setting and says what happened (a pure function here: the trials are behind `Objective`,
// so the unit tests drive it with a table).
//
//  * Start at the first value of every param (the baseline "first value"). If that gives no
//    throughput, stop: there is nothing to compare with.
//  * Batch-size-like params (pow2:LO..HI) first: double from the current value until a size runs
//    out of memory, gives no throughput, passes HI, or does not beat the best so far by more
//    than the plateau threshold (the plateau); after an out-of-memory, bisect on integers between
//    the last size that fitted and the first that did not, so the boundary is exact (fits at 88,
//    OOM at 89). The best size is the best-throughput one that fits, where a larger size must beat
//    a smaller by more than the threshold: the plateau point, or the largest that fits.
//  * Then the other params (lists), each value in the order given, at the best batch; a value
//    replaces the best only when it beats it by more than the threshold (so, within noise, the
//    value listed first — fewer workers, the default — stays).
//  * Several params: coordinate descent, rounds over all of them until a round changes nothing
//    (at most max_rounds). In later rounds a pow2 param continues upwards from its best value,
//    capped at the largest size known to fit (a boundary is bisected once).
//  * The objective stops the search (budget spent, interrupted) by answering kStop.
// Every setting is evaluated once (results are cached by setting).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tune/params.h"

namespace gpuscope::tune {

struct Evaluation {
  enum class Kind : uint8_t {
    kOk,    // a throughput
    kOom,   // ran out of device memory
    kBad,   // failed, or no throughput (no_metric): not a candidate, not a boundary
    kStop,  // not run: the search ends here (budget spent, interrupted)
  };
  Kind kind = Kind::kBad;
  double throughput = 0;  // kOk; higher is better
};

using Objective = std::function<Evaluation(const Setting&)>;

struct SearchOptions {
  double plateau = 0.05;  // a gain below this share is no gain (the plateau; noise)
  int max_rounds = 4;     // coordinate-descent rounds at most
};

// What is known of a pow2 param's out-of-memory boundary.
struct Boundary {
  std::string param;
  int64_t largest_fit = 0;  // the largest size that ran (0: none)
  int64_t first_oom = 0;    // the smallest size that ran out of memory (0: none did)
  bool exact() const { return largest_fit > 0 && first_oom == largest_fit + 1; }
};

struct SearchResult {
  Setting first;           // the baseline
  bool have_best = false;  // the baseline gave a throughput
  Setting best;
  double best_throughput = 0;
  bool stopped = false;                  // the objective said stop
  Setting stopped_at;                    // the setting it was not run
  std::vector<std::string> not_reached;  // params whose values the search never came to
  std::vector<Boundary> boundaries;      // one per pow2 param, in the params' order
  std::vector<std::string> log;          // the decisions, one line each
  int rounds = 0;                        // coordinate-descent rounds begun
};

SearchResult Search(const std::vector<Param>& params, const SearchOptions& options,
                    const Objective& objective);

}  // namespace gpuscope::tune
