// autosync/search/pick.hpp — the answer: the simplest strategy within epsilon of the best score.
//
//   1. candidates   the archive's front (the simplest strategy for each predicted time) and its
//                   top (the fastest few), those predicted within 50 % of the fastest, and every
//                   rule-abiding baseline and each family's best whatever their prediction (the
//                   estimate runs server lanes side by side, the executor one bucket at a time:
//                   the score may rank first what the estimate put far behind);
//   2. score        analytical, or with options.correction: corrected x exp(w max(0, -log
//                   factor)) (a correction that says faster than the model is trusted less; one
//                   that says slower is taken as it is), x max(1, serial replay / estimate) for
//                   parameter servers with options.serial_executor (search/options.hpp,
//                   search/serial.hpp);
//   3. pick         the best-scored candidate B sets two thresholds: a candidate qualifies when
//                   its model time (the estimate, x serial replay / estimate with
//                   serial_executor) is within (1 + epsilon) of B's and its score within
//                   (1 + tolerance) of B's, tolerance = epsilon + w x max(0, -log factor of B)
//                   (a correction that makes B that much faster than the model is not trusted to
//                   finer distinctions; without a correction both conditions are one). Among the
//                   qualifying candidates,
//                   the least complex (fewest groups, then fewest non-default aspects), ties by
//                   score;
//   4. polish       the pick is simplified further while it stays under the threshold: runs
//                   merge with their neighbour (either one's strategy), large tensors rejoin
//                   their run, one aspect at a time returns to its default (group_desc{}).
//                   A change is taken only when it lowers the complexity, so the polish ends;
//                   it has a budget of its own, 8 evaluations per group + 16. Each
//                   simplification must qualify under the same two thresholds.
//
// The thresholds are fixed by B, so the answer is never more than epsilon worse than B by the
// model, however many simplifications it took.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/model.hpp>
#include <autosync/search/options.hpp>
#include <autosync/search/selection.hpp>
#include <autosync/search/serial.hpp>
#include <autosync/search/space.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace autosync::search::detail {

class picker {
 public:
  picker(const model_spec& m, const cluster_spec& c, const options& o, const space& sp, const cost::evaluator& ev,
         std::size_t& evaluated, std::uint64_t& work)
      : m_(m), c_(c), o_(o), sp_(sp), ev_(ev), evaluated_(evaluated), work_(work) {}

  // Fills r.epsilon, r.reranked, r.best_score, r.score, r.log_factor; returns the pick.
  kept pick(const archive& a, double best_time, result& r) {
    std::vector<const kept*> pool;
    auto add = [&](const kept& e) {
      for (const auto* q : pool)
        if ((q->flat && e.flat && q->point == e.point) || (!q->flat && !e.flat && q->desc.name == e.desc.name)) return;
      pool.push_back(&e);
    };
    for (const auto* list : {&a.front(), &a.top()})
      for (const auto& e : *list)
        if (e.time <= best_time * 1.5) add(e);
    // the baselines and each family's best, whatever the estimate says of them: the estimate runs
    // server lanes side by side and the executor does not, so the score (the executor's time,
    // corrected) can rank first what the estimate put far behind
    for (const auto& e : a.baselines()) add(e);
    for (auto f : pure_families)
      if (const auto& k = a.best_of(f)) add(*k);
    r.epsilon = o_.epsilon;
    r.reranked = o_.correction.corrected();
    if (pool.empty()) throw error("search", "no strategy was costed");
    std::vector<scored> sc;
    sc.reserve(pool.size());
    for (const auto* e : pool) sc.push_back(score(e->flat ? sp_.materialize(e->point) : e->desc));
    std::size_t top = 0;
    for (std::size_t i = 1; i < sc.size(); ++i)
      if (sc[i].score < sc[top].score) top = i;
    const double best = sc[top].score;
    // a correction that makes the best strategy faster than the model by |log factor| is not
    // trusted to finer than uncertainty_weight x that: its score's tolerance grows by it; the
    // model's stays epsilon
    r.tolerance = o_.epsilon + o_.uncertainty_weight * optimism(sc[top].log_factor);
    thr_score_ = best * (1.0 + r.tolerance);
    thr_model_ = sc[top].model * (1.0 + o_.epsilon);
    r.reference = sc[top].model;
    std::size_t at = pool.size();
    for (std::size_t i = 0; i < pool.size(); ++i) {
      if (!within(sc[i])) continue;
      if (at == pool.size() || pool[i]->key < pool[at]->key || (pool[i]->key == pool[at]->key && sc[i].score < sc[at].score)) at = i;
    }
    pick_ = *pool[at];
    score_ = sc[at];
    if (pick_.flat) polish();
    r.best_score = best;
    r.score = score_.score;
    r.log_factor = score_.log_factor;
    return pick_;
  }

 private:
  struct scored {
    double score = 0.0, log_factor = 0.0;
    double model = 0.0;  // the analytical estimate (max with the serial replay with serial_executor)
  };
  [[nodiscard]] bool within(const scored& x) const { return x.score <= thr_score_ && x.model <= thr_model_; }
  [[nodiscard]] scored score(const strategy_desc& s) const {
    scored r;
    // the replay differs from the estimate with parameter servers and with priority groups
    // (readiness rounds); with a correction the features already hold it (features::executor)
    const bool differs = std::any_of(s.groups.begin(), s.groups.end(), [](const group_desc& g) {
      return g.architecture == architecture_kind::parameter_server || g.schedule == schedule_kind::priority;
    });
    if (o_.correction.corrected()) {
      const auto p = o_.correction(m_, c_, s);
      r.model = o_.serial_executor ? p.executor : p.analytical.iteration;  // the correction's base: the executor's iteration
      r.log_factor = p.log_factor;
    } else if (o_.serial_executor && differs) {
      const auto sr = serial_replay(m_, c_, s);  // the estimate and the replay of one evaluation
      r.model = sr.estimate;
      if (sr.estimate > 0.0) r.model *= std::max(1.0, sr.iteration / sr.estimate);
    } else {
      r.model = ev_(s).iteration;
    }
    r.score = r.model * std::exp(r.log_factor + o_.uncertainty_weight * optimism(r.log_factor));
    return r;
  }
  // How far a correction says a strategy is faster than the model (0 when it says slower).
  [[nodiscard]] static double optimism(double log_factor) noexcept { return std::max(0.0, -log_factor); }

  // Takes `next` when it is simpler than the pick and scores under the threshold.
  bool simpler(const candidate& next) {
    if (evaluated_ >= limit_ || !sp_.feasible(next)) return false;
    sp_.materialize(next, scratch_);
    const auto key = complexity_of(scratch_);
    if (!(key < pick_.key)) return false;
    const auto s = score(scratch_);
    ++evaluated_;
    work_ += items_of(m_, scratch_, search_work_per_ps_item(ev_.fab().servers.size(), ev_.fab().workers.size()));
    if (!within(s)) return false;
    pick_.point = next;
    pick_.key = key;
    score_ = s;
    return true;
  }

  // Each aspect of g alone back to its default (group_desc{}); the architecture with the
  // default topology; each level of a hierarchy back to ring.
  template <class Try>
  static void simplify_group(const group_desc& g, Try&& attempt) {
    const group_desc d{};
    auto with = [&](auto&& edit) {
      group_desc x = g;
      edit(x);
      x = space::normalized(x);
      if (!(x == g)) attempt(x);
    };
    with([&](group_desc& x) {
      x.architecture = d.architecture;
      x.topology = d.topology;
    });
    with([&](group_desc& x) { x.topology = d.topology; });
    if (g.topology.kind == topology_kind::hierarchical) {  // a level of the hierarchy back to ring
      with([&](group_desc& x) { x.topology.inter = topology_kind::ring; });
      with([&](group_desc& x) { x.topology.intra = topology_kind::ring; });
    }
    with([&](group_desc& x) { x.schedule = d.schedule; });
    with([&](group_desc& x) { x.partitioner = d.partitioner; });
    with([&](group_desc& x) { x.compression = d.compression; });
    with([&](group_desc& x) { x.placement = d.placement; });
    with([&](group_desc& x) { x.replication = d.replication; });
    with([&](group_desc& x) { x.fusion = d.fusion; });
  }

  void polish() {
    auto& p = pick_.point;
    limit_ = evaluated_ + 8 * (p.runs.size() + p.own.size()) + 16;
    candidate next;
    for (bool again = true; again && evaluated_ < limit_;) {
      again = false;
      for (std::size_t r = p.runs.size(); r-- > 1 && evaluated_ < limit_;) {  // neighbouring runs merge
        if (r >= p.runs.size()) continue;
        for (int side = 0; side < 2; ++side) {
          next = p;
          if (side == 1) next.runs[r - 1] = next.runs[r];
          next.starts.erase(next.starts.begin() + static_cast<std::ptrdiff_t>(r));
          next.runs.erase(next.runs.begin() + static_cast<std::ptrdiff_t>(r));
          if (simpler(next)) {
            again = true;
            break;
          }
        }
      }
      for (std::size_t s = 0; s < p.own.size() && evaluated_ < limit_; ++s) {  // overrides rejoin their run
        if (!p.own[s] || sp_.slot_sparse(s)) continue;
        next = p;
        next.own[s] = 0;
        again = simpler(next) || again;
      }
    }
    for (std::size_t r = 0; r < p.runs.size() && evaluated_ < limit_; ++r)  // aspects back to defaults
      simplify_group(p.runs[r], [&](const group_desc& x) {
        next = p;
        next.runs[r] = x;
        (void)simpler(next);
      });
    for (std::size_t s = 0; s < p.own.size() && evaluated_ < limit_; ++s) {
      if (!p.own[s]) continue;
      simplify_group(p.owned[s], [&](const group_desc& x) {
        next = p;
        next.owned[s] = x;
        (void)simpler(next);
      });
    }
  }

  const model_spec& m_;
  const cluster_spec& c_;
  const options& o_;
  const space& sp_;
  const cost::evaluator& ev_;
  std::size_t& evaluated_;
  std::uint64_t& work_;
  std::size_t limit_ = 0;
  double thr_score_ = 0.0, thr_model_ = 0.0;
  kept pick_;
  scored score_;
  strategy_desc scratch_;
};

}  // namespace autosync::search::detail
