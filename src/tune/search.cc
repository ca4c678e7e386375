#include "tune/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace gpuscope::tune {

namespace {

using Kind = Evaluation::Kind;

const char* KindWord(Kind k) {
  switch (k) {
    case Kind::kOk:
      return "ok";
    case Kind::kOom:
      return "out of memory";
    case Kind::kBad:
      return "no result";
    case Kind::kStop:
      return "not run";
  }
  return "";
}

class Searcher {
 public:
  Searcher(const std::vector<Param>& params, const SearchOptions& options,
           const Objective& objective)
      : params_(params), options_(options), objective_(objective) {}

  SearchResult Run() {
    r_.first = FirstSetting(params_);
    for (const Param& p : params_)
      if (p.kind == ParamKind::kPow2) r_.boundaries.push_back({p.name, 0, 0});
    // Batch-like params first, then the others in the order given.
    std::vector<const Param*> order;
    for (const Param& p : params_)
      if (p.kind == ParamKind::kPow2) order.push_back(&p);
    for (const Param& p : params_)
      if (p.kind != ParamKind::kPow2) order.push_back(&p);
    for (const Param* p : order) r_.not_reached.push_back(p->name);

    Evaluation e;
    if (!Eval(r_.first, &e)) return Finish();
    if (e.kind == Kind::kOom)
      for (const Param& p : params_)
        if (p.kind == ParamKind::kPow2) Bound(p.name)->first_oom = p.lo;
    if (e.kind != Kind::kOk) {
      r_.log.push_back(
          fmt::format("the first setting ({}) gave {}: nothing to compare with, "
                      "the search stops",
                      SettingText(r_.first, params_), KindWord(e.kind)));
      return Finish();
    }
    best_ = r_.first;
    best_tp_ = e.throughput;
    r_.have_best = true;
    for (int round = 1; round <= options_.max_rounds; ++round) {
      r_.rounds = round;
      const Setting before = best_;
      for (const Param* p : order) {
        if (round == 1)
          r_.not_reached.erase(std::find(r_.not_reached.begin(), r_.not_reached.end(), p->name));
        const bool go_on = p->kind == ParamKind::kPow2 ? Pow2(*p) : List(*p);
        if (!go_on) return Finish();
      }
      if (best_ == before) {
        if (order.size() > 1)
          r_.log.push_back(fmt::format("round {} changed nothing: done", round));
        break;
      }
      if (order.size() == 1) break;  // one param: one pass is the whole search
      if (round == options_.max_rounds)
        r_.log.push_back(fmt::format("stopped after {} rounds (still changing)", round));
    }
    return Finish();
  }

 private:
  SearchResult Finish() {
    r_.best = best_;
    r_.best_throughput = best_tp_;
    return std::move(r_);
  }

  Boundary* Bound(const std::string& name) {
    for (Boundary& b : r_.boundaries)
      if (b.param == name) return &b;
    return nullptr;
  }

  // False when the objective stopped the search.
  bool Eval(const Setting& s, Evaluation* out) {
    if (const auto it = cache_.find(s); it != cache_.end()) {
      *out = it->second;
      return true;
    }
    Evaluation e = objective_(s);
    if (e.kind == Kind::kStop) {
      r_.stopped = true;
      r_.stopped_at = s;
      return false;
    }
    cache_[s] = e;
    *out = e;
    return true;
  }

  // The rule of the whole search: a candidate replaces the best only when it beats it by more
  // than the plateau threshold.
  bool Beats(const Evaluation& e) const {
    return e.kind == Kind::kOk && e.throughput > best_tp_ * (1 + options_.plateau);
  }

  std::string Gain(const Evaluation& e) const {
    return best_tp_ > 0 ? fmt::format("{:+.1f} %", 100.0 * (e.throughput / best_tp_ - 1)) : "";
  }

  bool List(const Param& p) {
    for (const std::string& v : p.values) {
      if (best_.at(p.name) == v) continue;
      Setting c = best_;
      c[p.name] = v;
      const bool cached = cache_.count(c) > 0;
      Evaluation e;
      if (!Eval(c, &e)) return false;
      if (Beats(e)) {
        if (!cached)
          r_.log.push_back(
              fmt::format("{}: {} beats {} ({})", p.name, v, best_.at(p.name), Gain(e)));
        best_ = c;
        best_tp_ = e.throughput;
      }
    }
    return true;
  }

  bool Pow2(const Param& p) {
    Boundary* b = Bound(p.name);
    int64_t v = std::stoll(best_.at(p.name));
    int64_t last_fit = v;  // the best size ran
    int64_t first_oom = 0;
    std::string ladder = std::to_string(v);
    std::string why_stopped;
    for (;;) {
      int64_t next = v * 2;
      // A boundary bisected in an earlier round caps the ladder: no second bisection.
      if (b->first_oom > 0 && next >= b->first_oom) next = b->largest_fit;
      if (next > p.hi) {
        why_stopped = fmt::format("the next doubling passes {}", p.hi);
        break;
      }
      if (next <= v) {
        if (b->first_oom > 0) why_stopped = fmt::format("{} is the largest known to fit", v);
        break;
      }
      Setting c = best_;
      c[p.name] = std::to_string(next);
      Evaluation e;
      if (!Eval(c, &e)) return false;
      ladder += " → " + std::to_string(next);
      if (e.kind == Kind::kOom) {
        first_oom = next;
        why_stopped = "out of memory";
        break;
      }
      if (e.kind != Kind::kOk) {
        why_stopped = "no result";
        break;
      }
      last_fit = std::max(last_fit, next);
      if (!Beats(e)) {
        why_stopped = fmt::format("plateau: {} ≤ {:.0f} %", Gain(e), 100 * options_.plateau);
        break;
      }
      best_ = c;
      best_tp_ = e.throughput;
      v = next;
    }
    if (ladder.find("→") != std::string::npos || !why_stopped.empty())
      r_.log.push_back(fmt::format("{}: {}{}", p.name, ladder,
                                   why_stopped.empty() ? "" : " (" + why_stopped + ")"));
    // Bisection between the last size that ran and the first that did not fit.
    if (first_oom > 0) {
      int64_t lo = last_fit, hi = first_oom;
      std::string tried;
      while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        Setting c = best_;
        c[p.name] = std::to_string(mid);
        Evaluation e;
        if (!Eval(c, &e)) {
          Record(b, lo, hi);
          return false;
        }
        tried += fmt::format("{}{} {}", tried.empty() ? "" : ", ", mid,
                             e.kind == Kind::kOk ? "fits" : KindWord(e.kind));
        if (e.kind == Kind::kOom) {
          hi = mid;
        } else if (e.kind == Kind::kOk) {
          lo = mid;
          if (Beats(e)) best_ = c, best_tp_ = e.throughput;
        } else {
          tried += " (bisection stops: a trial without result cannot tell)";
          break;
        }
      }
      Record(b, lo, hi);
      r_.log.push_back(fmt::format("{}: bisecting {}..{}: {} → {}", p.name, last_fit, first_oom,
                                   tried.empty() ? "nothing between" : tried,
                                   hi - lo == 1 ? fmt::format("fits at {}, OOM at {}", lo, hi)
                                                : fmt::format("between {} and {}", lo, hi)));
    } else {
      Record(b, last_fit, 0);
    }
    return true;
  }

  static void Record(Boundary* b, int64_t fit, int64_t oom) {
    b->largest_fit = std::max(b->largest_fit, fit);
    if (oom > 0) b->first_oom = b->first_oom > 0 ? std::min(b->first_oom, oom) : oom;
  }

  const std::vector<Param>& params_;
  const SearchOptions& options_;
  const Objective& objective_;
  std::map<Setting, Evaluation> cache_;
  SearchResult r_;
  Setting best_;
  double best_tp_ = 0;
};

}  // namespace

SearchResult Search(const std::vector<Param>& params, const SearchOptions& options,
                    const Objective& objective) {
  return Searcher(params, options, objective).Run();
}

}  // namespace gpuscope::tune
