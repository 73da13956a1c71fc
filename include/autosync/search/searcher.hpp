// autosync/search/searcher.hpp — the walk of search::optimize (search/optimizer.hpp documents
// the phases). Internal: use search::optimize.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/search/constraints.hpp>
#include <autosync/search/options.hpp>
#include <autosync/search/pick.hpp>
#include <autosync/search/selection.hpp>
#include <autosync/search/serial.hpp>
#include <autosync/search/space.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autosync::search {

namespace detail {

class searcher {
 public:
  searcher(const model_spec& m, const cluster_spec& c, const options& o)
      : m_(m), c_(c), o_(o), sp_(m, c, space_options{o.allow_lossy, o.tiny_bytes, o.large_bytes, o.lossy}), ev_(m, c), rng_(o.seed),
        kept_(o.rerank_count) {
    if (o.max_evaluations < 1) throw error("max_evaluations", "must be >= 1");
    if (o.beam_width < 1) throw error("beam_width", "must be >= 1");
    if (!(o.epsilon >= 0.0) || !std::isfinite(o.epsilon)) throw error("epsilon", "must be a finite number >= 0");
    if (!(o.uncertainty_weight >= 0.0) || !std::isfinite(o.uncertainty_weight))
      throw error("uncertainty_weight", "must be a finite number >= 0");
    // per dense position: dense bytes and per-compressor wire factor for the bound
    for (auto ti : sp_.dense()) dense_bytes_.push_back(static_cast<double>(m.tensors[ti].bytes()));
    floor_ = (ev_.ctx().forward + ev_.ctx().backward) * (1.0 + 1e-12);
    ps_item_work_ = search_work_per_ps_item(ev_.fab().servers.size(), ev_.fab().workers.size());
  }

  result run() {
    result r;
    seed(r);
    construct();
    // The evaluation budget: max_evaluations, or fewer when the items costed so far say that
    // max_work runs out first (both counts are deterministic).
    budget_ = o_.max_evaluations;
    if (o_.max_work > 0 && evaluated_ > 0) {
      const double per = static_cast<double>(work_) / static_cast<double>(evaluated_);
      const double left = work_ < o_.max_work ? static_cast<double>(o_.max_work - work_) : 0.0;
      budget_ = std::min(budget_, evaluated_ + static_cast<std::size_t>(left / std::max(per, 1.0)));
    }
    const auto budget = budget_;
    descend(evaluated_ + (budget > evaluated_ ? (budget - evaluated_) * 3 / 10 : 0));
    limit_ = budget - budget / 10;  // the last tenth: descent from the best point
    anneal();
    limit_ = std::numeric_limits<std::size_t>::max();
    if (best_is_flat_) {
      cur_ = best_;
      cur_t_ = best_time_;
      descend(budget);
    }
    select(r);
    finish(r);
    return r;
  }

 private:
  [[nodiscard]] bool out_of_budget() const {
    if (evaluated_ >= std::min({limit_, o_.max_evaluations, budget_})) return true;
    if (o_.max_work > 0 && work_ >= o_.max_work) return true;
    // No strategy beats forward + backward: an incumbent there is optimal, stop.
    if (best_time_ <= floor_) return true;
    return false;
  }
  void report(std::string_view phase) const {
    if (o_.on_progress) o_.on_progress(progress{steps_, best_time_, evaluated_, phase});
  }

  // Wire bytes of a dense tensor under compressor id (items.hpp's rule, whole tensor).
  [[nodiscard]] double wire(std::size_t dense_pos, compression_id id) const {
    const auto& t = m_.tensors[sp_.dense()[dense_pos]];
    const auto info = find_compression(id);
    if (info && shrinks(t.type, info->wire_bytes_per_element))
      return dense_bytes_[dense_pos] / size_of(t.type) * info->wire_bytes_per_element;
    return dense_bytes_[dense_pos];
  }

  // A registered compressor or extension slot prices its own bytes (registry wire_bytes, per
  // bucket: strategy/items.hpp priced_per_bucket; detail::codec_of says which groups); the bound
  // counts none of them, which stays below the estimate (a top-k or int8 group counted dense put
  // the bound above it, and the search dropped such candidates unevaluated).
  [[nodiscard]] static bool priced_by_registry(const group_desc& g) { return autosync::detail::codec_of(g).ext; }

  // forward + max(backward, lane-0 bandwidth bound of the dense collective bytes): <= the
  // estimate's own lower_bound <= its iteration time.
  [[nodiscard]] double bound(const candidate& c) const {
    double collective = 0.0;
    const auto n = sp_.dense().size();
    for (std::size_t r = 0; r < c.runs.size(); ++r) {
      if (!is_collective(c.runs[r].architecture) || priced_by_registry(c.runs[r])) continue;
      for (auto p = c.starts[r]; p < c.run_end(r, n); ++p) {
        const auto sl = sp_.slot_of(sp_.dense()[p]);
        if (sl >= 0 && c.own[static_cast<std::size_t>(sl)]) continue;
        collective += wire(p, c.runs[r].compression);
      }
    }
    for (std::size_t s = 0; s < c.own.size(); ++s) {
      if (!c.own[s] || sp_.slot_sparse(s) || !is_collective(c.owned[s].architecture) || priced_by_registry(c.owned[s])) continue;
      const auto ti = sp_.slots()[s];
      const auto& t = m_.tensors[ti];
      const auto info = find_compression(c.owned[s].compression);
      const double es = size_of(t.type);
      double b = static_cast<double>(t.bytes());
      if (info && info->wire_bytes_per_element > 0.0 && info->wire_bytes_per_element < es) b = b / es * info->wire_bytes_per_element;
      collective += b;
    }
    const auto& x = ev_.ctx();
    return (x.forward + std::max(x.backward, cost::lower_bound(ev_.fab(), collective))) * (1.0 - 1e-9);
  }

  // Costs c (feasible). Returns +inf when the budget is spent; tracks the incumbent.
  double evaluate(const candidate& c) {
    if (out_of_budget()) return std::numeric_limits<double>::infinity();
    sp_.materialize(c, scratch_);
    const double t = ev_(scratch_).iteration;
    ++evaluated_;
    work_ += items_of(m_, scratch_, ps_item_work_);
    kept_.offer(m_, t, scratch_, &c);
    if (t < best_time_) {
      best_time_ = t;
      best_ = c;
      best_is_flat_ = true;
    }
    if (o_.progress_every > 0 && evaluated_ % o_.progress_every == 0) report(phase_);
    return t;
  }

  // ---- 1. seed ------------------------------------------------------------------------------
  void seed(result& r) {
    phase_ = "seed";
    const context cx{m_, c_, sp_.rules()};
    for (auto& s : baselines::all(m_, c_)) {
      s.validate(m_, c_);
      auto p = ev_(s);
      ++evaluated_;
      work_ += items_of(m_, s, ps_item_work_);
      if (satisfies(cx, s)) {
        kept_.offer(m_, p.iteration, s, nullptr);
        if (p.iteration < best_time_) {
          best_time_ = p.iteration;
          best_desc_ = s;
          r.best_baseline = s.name;
          best_is_flat_ = false;
        }
        if (auto lifted = sp_.lift(s)) starts_.push_back(std::move(*lifted));
      }
      r.baselines.push_back(baseline_result{s.name, std::move(s), std::move(p)});
    }
    report(phase_);
  }

  // ---- 2. construct -------------------------------------------------------------------------
  struct scored {
    double time;
    candidate point;
  };
  void keep(std::vector<scored>& beam, double t, const candidate& c) const {
    if (!std::isfinite(t)) return;
    beam.push_back(scored{t, c});
    std::stable_sort(beam.begin(), beam.end(), [](const scored& a, const scored& b) { return a.time < b.time; });
    if (beam.size() > o_.beam_width) beam.resize(o_.beam_width);
  }

  void construct() {
    phase_ = "construct";
    std::vector<scored> beam;
    // lifted baselines
    for (const auto& c : starts_) keep(beam, evaluate(c), c);
    // uniform strategies
    static constexpr std::array<std::uint64_t, 6> caps{std::uint64_t{1} << 20, std::uint64_t{1} << 22, std::uint64_t{1} << 24,
                                                       std::uint64_t{1} << 26, std::uint64_t{1} << 28, unbounded_bytes};
    for (auto a : sp_.dense_architectures()) {
      std::vector<group_desc> gs;
      if (is_collective(a)) {
        for (const auto& t : sp_.topologies(a))
          for (auto cap : caps) {
            group_desc g;
            g.architecture = a;
            g.topology = t;
            g.fusion = fusion_value{cap, cap};
            gs.push_back(g);
          }
      } else {
        for (auto pl : {placement_kind::load_balanced, placement_kind::hashed})
          for (auto rep : sp_.replications())
            for (std::uint64_t pb : {std::uint64_t{0}, std::uint64_t{4096000}}) {
              group_desc g;
              g.architecture = a;
              g.placement = placement_value{pl, 0};
              g.replication = rep;
              if (pb) g.partitioner = partitioner_value{partitioner_kind::by_bytes, 1, 0, pb};
              g.fusion = fusion_value{std::uint64_t{1} << 22, std::uint64_t{1} << 22};
              gs.push_back(g);
            }
      }
      double best_t = std::numeric_limits<double>::infinity();
      group_desc best_g;
      for (const auto& g : gs) {
        auto c = sp_.uniform(g);
        if (!sp_.feasible(c)) continue;
        const double t = evaluate(c);
        keep(beam, t, c);
        if (t < best_t) {
          best_t = t;
          best_g = g;
        }
      }
      // The best uniform collective strategy with each other compressor the space allows (lossy
      // ones only with allow_lossy), on the ring where the compressor owns its exchange. The walk
      // follows the estimate, which may keep it among parameter-server strategies the executor
      // runs far slower (their server lanes side by side): then no compressed collective strategy
      // was costed, and the pick was an uncompressed one (resnet50 on commodity-10gbe-x8 with
      // fp16 allowed: 240 ms, fp16 on the same buckets 140 ms).
      if (!is_collective(a) || !std::isfinite(best_t)) continue;
      for (const auto& cv : sp_.compressions()) {
        if (cv == best_g.compression) continue;
        group_desc g = best_g;
        g.compression = cv;
        if (registry::exchange_owner(cv.id)) g.topology = topology_value{};
        auto c = sp_.uniform(g);
        if (!sp_.feasible(c)) continue;
        keep(beam, evaluate(c), c);
      }
    }
    // run counts
    const auto top = beam;
    for (const auto& b : top)
      for (std::size_t count : {2u, 4u, 8u, 16u, 32u}) {
        if (count > sp_.dense().size()) break;
        auto c = sp_.equal_runs(b.point.runs[0], count);
        if (c.runs.size() < 2 || !sp_.feasible(c)) continue;
        keep(beam, evaluate(c), c);
      }
    if (beam.empty()) return;
    cur_ = beam.front().point;
    cur_t_ = beam.front().time;
  }

  // Coordinate descent on (cur_, cur_t_): every allowed value of every aspect of every group
  // (runs, then owned overrides), every override toggled, first improvement taken; rounds
  // until nothing improves or `until` evaluations are spent.
  void descend(std::size_t until) {
    const auto saved = limit_;
    limit_ = std::min(limit_, until);
    candidate next;
    std::vector<group_desc> vs;
    bool improved = true;
    while (improved && !out_of_budget() && !cur_.runs.empty()) {
      improved = false;
      for (std::size_t r = 0; r < cur_.runs.size() && !out_of_budget(); ++r)
        for (auto a : sp_.aspects()) {
          vs.clear();
          sp_.variants(cur_.runs[r], a, nullptr, vs);
          for (const auto& v : vs) {
            if (v == cur_.runs[r] || out_of_budget()) continue;
            next = cur_;
            next.runs[r] = v;
            if (!sp_.feasible(next)) continue;
            improved = try_accept(next, cur_, cur_t_, 0.0) || improved;
          }
        }
      for (std::size_t r = 1; r < cur_.runs.size() && !out_of_budget(); ++r) {
        if (cur_.runs[r] == cur_.runs[r - 1]) continue;
        next = cur_;
        std::swap(next.runs[r], next.runs[r - 1]);
        if (sp_.feasible(next) && try_accept(next, cur_, cur_t_, 0.0)) improved = true;
      }
      for (std::size_t s = 0; s < cur_.own.size() && !out_of_budget(); ++s) {
        if (!cur_.own[s]) {
          if (sp_.slot_sparse(s)) continue;
          next = cur_;  // give the tensor its run's group, then its best partition below
          override_move(next, s);
          next.owned[s].partitioner = partitioner_value{};
          if (sp_.feasible(next) && try_accept(next, cur_, cur_t_, 0.0)) improved = true;
          if (!cur_.own[s]) continue;
        } else if (!sp_.slot_sparse(s)) {
          next = cur_;
          next.own[s] = 0;
          if (sp_.feasible(next) && try_accept(next, cur_, cur_t_, 0.0)) {
            improved = true;
            continue;
          }
          next = cur_;
          if (swap_move(next, s) && sp_.feasible(next) && try_accept(next, cur_, cur_t_, 0.0)) improved = true;
        }
        const auto* t = &m_.tensors[sp_.slots()[s]];
        for (auto a : sp_.aspects()) {
          vs.clear();
          sp_.variants(cur_.owned[s], a, t, vs);
          for (const auto& v : vs) {
            if (v == cur_.owned[s] || out_of_budget()) continue;
            next = cur_;
            next.owned[s] = v;
            if (!sp_.feasible(next)) continue;
            improved = try_accept(next, cur_, cur_t_, 0.0) || improved;
          }
        }
      }
    }
    limit_ = saved;
  }

  // Evaluates `next` (after the bound) and moves `cur` there on acceptance (T = 0: improvements only).
  bool try_accept(const candidate& next, candidate& cur, double& cur_t, double temperature) {
    if (bound(next) >= cur_t) {
      ++pruned_;
      return false;
    }
    const double t = evaluate(next);
    if (!std::isfinite(t)) return false;
    const double delta = t - cur_t;
    if (delta > 0.0 && uphill_.size() < 4096) uphill_.push_back(delta / cur_t);
    if (delta < 0.0 || (temperature > 0.0 && rng_.unit() < std::exp(-delta / (temperature * cur_t)))) {
      cur = next;
      cur_t = t;
      return true;
    }
    return false;
  }

  // Gives slot s its own group (a large dense tensor: the run's group with a random
  // partitioner; a sparse one: a new architecture or partition) or returns it to its run.
  bool override_move(candidate& c, std::size_t s) {
    const auto ti = sp_.slots()[s];
    const auto& t = m_.tensors[ti];
    if (sp_.slot_sparse(s)) {
      const auto a = rng_.chance(0.5) ? aspect_of<slot::architecture> : (rng_.chance(0.5) ? aspect_of<slot::partitioner> : aspect_of<slot::placement>);
      return sp_.randomize(c.owned[s], a, rng_, &t);
    }
    if (c.own[s]) {
      c.own[s] = 0;
      return true;
    }
    const auto r = run_of_slot(c, s);
    c.own[s] = 1;
    c.owned[s] = c.runs[r];
    c.owned[s].partitioner = partitioner_value{};
    if (rng_.chance(0.5)) {
      c.owned[s].architecture = architecture_kind::parameter_server;
      c.owned[s] = space::normalized(c.owned[s]);
      c.owned[s].placement = placement_value{placement_kind::load_balanced, 0};
      c.owned[s].replication = rng_.pick(sp_.replications());  // chosen with the architecture (space::randomize)
    }
    c.owned[s].partitioner = sp_.random_partitioner(rng_, &t);
    return true;
  }

  // The run holding dense position of slot s's tensor.
  [[nodiscard]] std::size_t run_of_slot(const candidate& c, std::size_t s) const {
    const auto ti = sp_.slots()[s];
    std::size_t pos = 0;
    while (sp_.dense()[pos] != ti) ++pos;
    std::size_t r = 0;
    while (r + 1 < c.starts.size() && c.starts[r + 1] <= pos) ++r;
    return r;
  }
  // Exchanges the group strategies of an owned large tensor and of its run: the two-group
  // move that single-aspect moves cannot make.
  bool swap_move(candidate& c, std::size_t s) const {
    if (!c.own[s] || sp_.slot_sparse(s)) return false;
    const auto r = run_of_slot(c, s);
    if (c.runs[r] == c.owned[s]) return false;
    std::swap(c.runs[r], c.owned[s]);
    return true;
  }

  // ---- 3. anneal ----------------------------------------------------------------------------
  enum class move : std::uint8_t { boundary, split, merge, aspect_of_run, aspect_of_override, override_toggle, placement, swap, swap_runs };

  bool propose(candidate& c) {
    const auto n = static_cast<std::uint32_t>(sp_.dense().size());
    const auto R = c.runs.size();
    const auto kind = static_cast<move>(rng_.below(9));
    switch (kind) {
      case move::boundary: {
        if (R < 2) return false;
        const auto r = 1 + rng_.below(R - 1);
        const std::int64_t lo = c.starts[r - 1] + 1;
        const std::int64_t hi = static_cast<std::int64_t>(r + 1 < R ? c.starts[r + 1] : n) - 1;
        if (hi < lo) return false;
        const std::int64_t step = 1 + static_cast<std::int64_t>(rng_.below(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(n) / 16)));
        std::int64_t v = static_cast<std::int64_t>(c.starts[r]) + (rng_.chance(0.5) ? step : -step);
        v = std::clamp(v, lo, hi);
        if (v == static_cast<std::int64_t>(c.starts[r])) return false;
        c.starts[r] = static_cast<std::uint32_t>(v);
        return true;
      }
      case move::split: {
        const auto r = rng_.below(R);
        const auto b = c.starts[r], e = c.run_end(r, n);
        if (e - b < 2) return false;
        const auto at = static_cast<std::uint32_t>(rng_.between(b + 1, e - 1));
        c.starts.insert(c.starts.begin() + static_cast<std::ptrdiff_t>(r + 1), at);
        c.runs.insert(c.runs.begin() + static_cast<std::ptrdiff_t>(r + 1), c.runs[r]);
        if (rng_.chance(0.5)) sp_.randomize(c.runs[r + 1], sp_.aspects()[rng_.below(sp_.aspects().size())], rng_, nullptr);
        return true;
      }
      case move::merge: {
        if (R < 2) return false;
        const auto r = 1 + rng_.below(R - 1);
        if (rng_.chance(0.5)) c.runs[r - 1] = c.runs[r];
        c.starts.erase(c.starts.begin() + static_cast<std::ptrdiff_t>(r));
        c.runs.erase(c.runs.begin() + static_cast<std::ptrdiff_t>(r));
        return true;
      }
      case move::aspect_of_run:
        return sp_.randomize(c.runs[rng_.below(R)], sp_.aspects()[rng_.below(sp_.aspects().size())], rng_, nullptr);
      case move::aspect_of_override: {
        std::vector<std::size_t>& owned = tmp_;
        owned.clear();
        for (std::size_t s = 0; s < c.own.size(); ++s)
          if (c.own[s]) owned.push_back(s);
        if (owned.empty()) return false;
        const auto s = owned[rng_.below(owned.size())];
        return sp_.randomize(c.owned[s], sp_.aspects()[rng_.below(sp_.aspects().size())], rng_, &m_.tensors[sp_.slots()[s]]);
      }
      case move::override_toggle:
        if (c.own.empty()) return false;
        return override_move(c, rng_.below(c.own.size()));
      case move::placement: {
        std::vector<std::size_t>& ps = tmp_;
        ps.clear();
        for (std::size_t r = 0; r < R; ++r)
          if (c.runs[r].architecture == architecture_kind::parameter_server) ps.push_back(r);
        for (std::size_t s = 0; s < c.own.size(); ++s)
          if (c.own[s] && c.owned[s].architecture == architecture_kind::parameter_server) ps.push_back(R + s);
        if (ps.empty()) return false;
        const auto k = ps[rng_.below(ps.size())];
        return sp_.randomize(k < R ? c.runs[k] : c.owned[k - R], aspect_of<slot::placement>, rng_, nullptr);
      }
      case move::swap:
        if (c.own.empty()) return false;
        return swap_move(c, rng_.below(c.own.size()));
      case move::swap_runs: {  // two runs exchange their group strategies
        if (R < 2) return false;
        const auto a = rng_.below(R), b = rng_.below(R);
        if (a == b || c.runs[a] == c.runs[b]) return false;
        std::swap(c.runs[a], c.runs[b]);
        return true;
      }
    }
    return false;
  }

  // The starting temperature, relative to the current time: a worse move of the median size
  // seen so far (in construction and descent) is first accepted with probability e^-2.
  // Many groups make moves small, few groups make them large; the median adapts to both.
  [[nodiscard]] double start_temperature() {
    if (uphill_.empty()) return 0.05;
    auto mid = uphill_.begin() + static_cast<std::ptrdiff_t>(uphill_.size() / 2);
    std::nth_element(uphill_.begin(), mid, uphill_.end());
    return std::clamp(*mid / 2.0, 1e-4, 0.5);
  }

  // Rounds of annealing, each from the best point with the temperature reheated.
  void anneal() {
    phase_ = "anneal";
    if (cur_.runs.empty()) {
      report(phase_);
      return;
    }
    const std::size_t end = std::min(limit_, o_.max_evaluations);
    const std::size_t total = end > evaluated_ ? end - evaluated_ : 0;
    const std::size_t rounds = 3;
    for (std::size_t round = 0; round < rounds && !out_of_budget(); ++round) {
      if (best_is_flat_) {
        cur_ = best_;
        cur_t_ = best_time_;
      }
      const std::size_t first = evaluated_;
      const std::size_t budget = std::max<std::size_t>(1, round + 1 == rounds ? (end > first ? end - first : 0) : total / rounds);
      const auto saved = limit_;
      limit_ = std::min(limit_, first + budget);
      const double t0 = start_temperature(), t1 = t0 / 200.0;
      candidate next;
      std::size_t attempts = 0;
      while (!out_of_budget() && attempts < 50 * (budget + 1)) {
        ++attempts;
        next = cur_;
        if (!propose(next) || !sp_.feasible(next)) continue;
        ++steps_;
        const double frac = static_cast<double>(evaluated_ - first) / static_cast<double>(budget);
        const double temperature = t0 * std::pow(t1 / t0, std::min(1.0, frac));
        try_accept(next, cur_, cur_t_, temperature);
      }
      limit_ = saved;
    }
    report(phase_);
  }

  // ---- 4. select: the simplest strategy within epsilon of the best score (search/pick.hpp)
  void select(result& r) {
    phase_ = "polish";
    r.best_prediction = best_time_;
    picker pk{m_, c_, o_, sp_, ev_, evaluated_, work_};
    pick_ = pk.pick(kept_, best_time_, r);
    report(phase_);
  }
  [[nodiscard]] strategy_desc desc_of(const kept& k) const { return k.flat ? sp_.materialize(k.point) : k.desc; }

  void finish(result& r) {
    r.strategy = desc_of(pick_);
    r.strategy.name = "autosync";
    r.prediction = ev_(r.strategy);
    r.serial_iteration = serial_replay(m_, c_, r.strategy).iteration;
    r.simplicity = complexity_of(r.strategy);
    for (auto f : pure_families) {
      const auto& k = kept_.best_of(f);
      if (!k) continue;
      family_result fr;
      fr.kind = f;
      fr.strategy = desc_of(*k);
      if (k->flat) fr.strategy.name = "best " + std::string(name_of(f));
      fr.prediction = ev_(fr.strategy);
      r.families.push_back(std::move(fr));
    }
    r.evaluated = evaluated_;
    r.work = work_;
    r.pruned = pruned_;
    r.steps = steps_;
    phase_ = "done";
    report(phase_);
  }

  const model_spec& m_;
  const cluster_spec& c_;
  const options& o_;
  space sp_;
  cost::evaluator ev_;
  random rng_;
  archive kept_;
  std::vector<double> dense_bytes_;
  std::vector<candidate> starts_;
  strategy_desc scratch_;
  candidate best_, cur_;
  double cur_t_ = std::numeric_limits<double>::infinity();
  strategy_desc best_desc_;
  bool best_is_flat_ = false;
  double best_time_ = std::numeric_limits<double>::infinity();
  std::size_t evaluated_ = 0, pruned_ = 0, steps_ = 0;
  std::uint64_t work_ = 0;
  std::uint64_t ps_item_work_ = 1;  // search_work_per_ps_item of the cluster
  std::size_t limit_ = std::numeric_limits<std::size_t>::max();
  std::size_t budget_ = std::numeric_limits<std::size_t>::max();
  std::string_view phase_ = "seed";
  std::vector<std::size_t> tmp_;
  std::vector<double> uphill_;  // relative increases of worse candidates seen so far
  kept pick_;
  double floor_ = 0.0;  // forward + backward: the bound of every strategy
};

}  // namespace detail

}  // namespace autosync::search
