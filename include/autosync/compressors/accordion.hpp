// autosync/compressors/accordion.hpp — Accordion (Agarwal et al., MLSys 2021): one compressor at
// two levels per bucket, switched from how fast the gradient changes (exec/codecs/accordion.hpp
// has the rule), as values of the compression slot:
//
//   JSON                                   critical level        otherwise             reference pair
//   {"kind": "accordion_powersgd",         powersgd rank 2       powersgd rank 1       rank 2 / 1 (code);
//    "critical_rank": 2, "rank": 1,                                                    1 / 4 in its logs
//    "interval": 100}
//   {"kind": "accordion_topk",             topk density 0.99     topk density 0.1      99 % / 10 %
//    "critical_density": 0.99, "density": 0.1, "interval": 100}
//   {"kind": "accordion_int8",             none (all-reduce)     int8 (chunk 1024)     (the pair)
//    "interval": 100}
//
// Detection. Every iteration the exchange runs the current level and adds the result (the sum
// over ranks) into an accumulator; every `interval` iterations rank 0 takes its norm, compares it
// with the previous interval's (ratio = |old - now| / old) and chooses the critical (low
// compression) level when ratio >= eta = 0.5 (the reference's constant), else the high
// compression level; the first interval is critical. Rank 0's choice and ratio reach every rank
// through one all-reduce of two floats in which the other ranks add zeros (exact: x + 0 = x), so
// every rank switches alike with no broadcast in the exchange interface. The reference counts the
// interval in epochs (switch_freq 5 or 10); an exchange sees iterations, so `interval` is in
// iterations (default 100).
//
// State. PowerSGD's exchange is rebuilt when its level is switched to (a new rank needs a new Q;
// the reference also zeroes its error memory, here the residual is carried into the next step); top-k keeps one exchange whose density follows the
// level (its residual stays owed at any density, so error feedback conserves the sum across
// switches); int8 has no state.
// PowerSGD here starts at iteration 0 with min_compression_rate 2 (PyTorch's default).
//
// Cost and budget. The cost model and the lossy budget price the high-compression level (the
// state outside critical regimes); a critical interval costs what its level costs.
//
// Records. Each decision is noted on its bucket (registry::exchange_context::note):
// "accordion.level" (0 critical, 1 high compression) and "accordion.ratio" (+inf with no
// history); learn::record_trial writes them into the trial record's "exchange_notes".
#pragma once

#include <autosync/compressors/common.hpp>
#include <autosync/compressors/int8.hpp>
#include <autosync/compressors/powersgd.hpp>
#include <autosync/compressors/topk.hpp>
#include <autosync/exec/codecs/accordion.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace autosync::compressors {

// Policy types (emit_header): the three pairs with their parameters.
template <int CriticalRank = 2, int Rank = 1, long long Interval = 100>
struct accordion_powersgd {
  static_assert(CriticalRank >= 1 && Rank >= 1, "compression slot: autosync::compressors::accordion_powersgd<CriticalRank, Rank, ...>: ranks must be >= 1");
  static_assert(Interval >= 1, "compression slot: autosync::compressors::accordion_powersgd<..., Interval>: Interval must be >= 1");
  using slot = slot::compression;
  static constexpr std::string_view name = "accordion_powersgd";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = 4.0 * 2.0 * Rank / 1024.0;
  static constexpr double flops_per_element = flops_at(2.67) * Rank;
  static constexpr compression_value value{stable_id("accordion_powersgd"), {double(CriticalRank), double(Rank), double(Interval)}};
};
template <double CriticalDensity = 0.99, double Density = 0.1, long long Interval = 100>
struct accordion_topk {
  static_assert(CriticalDensity > 0.0 && CriticalDensity <= 1.0 && Density > 0.0 && Density <= 1.0,
                "compression slot: autosync::compressors::accordion_topk<CriticalDensity, Density, ...>: densities must be in (0, 1]");
  static_assert(Interval >= 1, "compression slot: autosync::compressors::accordion_topk<..., Interval>: Interval must be >= 1");
  using slot = slot::compression;
  static constexpr std::string_view name = "accordion_topk";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = 8.0 * Density;
  static constexpr double flops_per_element = flops_at(0.41);
  static constexpr compression_value value{stable_id("accordion_topk"), {CriticalDensity, Density, double(Interval)}};
};
template <long long Interval = 100>
struct accordion_int8 {
  static_assert(Interval >= 1, "compression slot: autosync::compressors::accordion_int8<Interval>: Interval must be >= 1");
  using slot = slot::compression;
  static constexpr std::string_view name = "accordion_int8";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = 1.0 + 8.0 / 1024.0;
  static constexpr double flops_per_element = flops_at(2.11);
  static constexpr compression_value value{stable_id("accordion_int8"), {double(Interval), 0, 0}};
};

namespace accordion_detail {
namespace acc = exec::codecs::accordion;

// The inner entries, built once (not looked up in the registry: registration order is free).
inline const registry::compression_entry& powersgd_inner() {
  static const registry::compression_entry e = powersgd_entry();
  return e;
}
inline const registry::compression_entry& topk_inner() {
  static const registry::compression_entry e = topk_entry();
  return e;
}
inline const registry::compression_entry& int8_inner() {
  static const registry::compression_entry e = int8_entry();
  return e;
}

// The two levels of one bucket: run(data, comm, level) exchanges at that level (0 critical,
// 1 high compression); switched(level) is told before the first run at a new level.
struct levels {
  std::function<void(unsigned char*, registry::exchange_comm&, int)> run;
  std::function<void(int)> switched;
  std::function<void(registry::state_writer&)> save;  // the levels' own state (empty: none)
  std::function<void(registry::state_reader&)> load;
};

class exchange {
 public:
  exchange(levels l, std::int64_t interval, registry::exchange_context x)
      : levels_(std::move(l)), interval_(interval < 1 ? 1 : interval), x_(std::move(x)), acc_(x_.elements, 0.0) {}

  // State: the step count, the interval's accumulated sum, the detector (rank 0's history), the
  // current level, then the levels' own state.
  void save(registry::state_writer& w) const {
    w.put(steps_);
    w.put(acc_);
    w.put(detector_);
    w.put(current_);
    if (levels_.save) levels_.save(w);
  }
  void load(registry::state_reader& r) {
    r.get(steps_, "steps");
    r.get_exact(acc_, "accumulated", x_.elements);
    r.get(detector_, "detector");
    r.get(current_, "level");
    if (current_ != acc::level::low_compression && current_ != acc::level::high_compression) throw error(r.field(), "level: neither 0 nor 1");
    if (levels_.load) levels_.load(r);
  }

  void operator()(unsigned char* data, registry::exchange_comm& comm) {
    levels_.run(data, comm, static_cast<int>(current_));
    const auto sum = floats(data, x_.elements);
    for (std::size_t i = 0; i < sum.size(); ++i) acc_[i] += static_cast<double>(sum[i]);
    if (++steps_ % interval_ != 0) return;
    // rank 0 decides; its level and ratio reach every rank exactly (the others add zeros)
    float msg[2] = {0.0f, 0.0f};
    if (comm.rank() == 0) {
      double sq = 0.0;
      for (double v : acc_) sq += v * v;
      acc::decision d;
      (void)detector_.observe(sq, acc::options{0.5, 1}, d);
      msg[0] = d.chosen == acc::level::high_compression ? 1.0f : 0.0f;
      msg[1] = std::isfinite(d.ratio) ? static_cast<float>(d.ratio) : std::numeric_limits<float>::infinity();
    }
    std::fill(acc_.begin(), acc_.end(), 0.0);
    comm.all_reduce(msg, 2);
    const auto next = msg[0] > 0.5f ? acc::level::high_compression : acc::level::low_compression;
    if (x_.note) {
      x_.note("accordion.level", next == acc::level::high_compression ? 1.0 : 0.0);
      x_.note("accordion.ratio", static_cast<double>(msg[1]));
    }
    if (next != current_ && levels_.switched) levels_.switched(static_cast<int>(next));
    current_ = next;
  }

 private:
  levels levels_;
  std::int64_t interval_ = 100;
  registry::exchange_context x_;
  std::vector<double> acc_;
  std::int64_t steps_ = 0;
  acc::detector detector_;  // meaningful on rank 0
  acc::level current_ = acc::level::low_compression;
};

// PowerSGD at rank q[0] (critical) or q[1], from iteration 0. A new rank needs a new Q, so the
// level's exchange is built afresh when it is switched to; the error-feedback residual E of the
// level left (this rank's owed gradient, rows x cols per compressed matrix) is added to the next
// gradient rather than dropped (the reference zeroes it), so the sum is conserved across switches.
inline levels powersgd_levels(const param_list& q, const registry::exchange_context& x) {
  struct both {
    param_list p[2];
    registry::exchange_context x;
    std::vector<powersgd_detail::exchange> ex;  // [critical, high]
    std::vector<float> carry;                  // residual handed over at the last switch
    int current = 0;
  };
  auto b = std::make_shared<both>(both{{param_list{q[0], 0, 2.0}, param_list{q[1], 0, 2.0}}, x, {}, {}, 0});
  b->ex.emplace_back(x.elements, b->p[0], x);
  b->ex.emplace_back(x.elements, b->p[1], x);
  return levels{[b](unsigned char* d, registry::exchange_comm& c, int l) {
                  if (!b->carry.empty()) {
                    const auto v = floats(d, b->x.elements);
                    for (std::size_t i = 0; i < v.size(); ++i) v[i] += b->carry[i];
                    b->carry.clear();
                  }
                  b->ex[static_cast<std::size_t>(l)](d, c);
                  b->current = l;
                },
                [b](int l) {
                  auto& old = b->ex[static_cast<std::size_t>(b->current)];
                  b->carry.assign(b->x.elements, 0.0f);
                  for (std::size_t i = 0; i < old.compressed.size(); ++i) {
                    const auto& m = old.compressed[i];
                    const auto& e = old.states[i].m;
                    if (e.size() != m.rows * m.cols) continue;  // never compressed: nothing owed
                    for (std::size_t k = 0; k < e.size(); ++k) b->carry[m.offset + k] += e[k];
                  }
                  b->ex[static_cast<std::size_t>(l)] = powersgd_detail::exchange(b->x.elements, b->p[l], b->x);
                },
                [b](registry::state_writer& w) {
                  w.put(static_cast<std::int32_t>(b->current));
                  w.put(b->carry);
                  b->ex[0].save(w);
                  b->ex[1].save(w);
                },
                [b](registry::state_reader& r) {
                  std::int32_t cur = 0;
                  r.get(cur, "powersgd level");
                  if (cur != 0 && cur != 1) throw error(r.field(), "powersgd level: neither 0 nor 1");
                  b->current = cur;
                  r.get(b->carry, "carry", b->x.elements);
                  if (!b->carry.empty() && b->carry.size() != b->x.elements) throw error(r.field(), "carry: not the bucket's length");
                  b->ex[0].load(r);
                  b->ex[1].load(r);
                }};
}
// One top-k exchange whose density follows the level: its residual stays owed at any density,
// so error feedback conserves the sum across switches.
inline levels topk_levels(const param_list& q, const registry::exchange_context& x) {
  auto tk = std::make_shared<topk_detail::exchange>(topk_detail::exchange{x.elements, q[0], {}, {}, {}, {}, {}});
  const double d[2] = {q[0], q[1]};
  return levels{[tk, d0 = d[0], d1 = d[1]](unsigned char* data, registry::exchange_comm& c, int l) {
                  tk->density = l == 0 ? d0 : d1;
                  (*tk)(data, c);
                },
                {},
                [tk](registry::state_writer& w) { tk->save(w); },
                [tk](registry::state_reader& r) { tk->load(r); }};
}
// A plain all-reduce (critical) or int8 min-max with 1024-element chunks.
inline levels int8_levels(const registry::exchange_context& x) {
  auto q8 = std::make_shared<registry::bucket_exchange>(int8_inner().make_exchange(param_list{1024, 0, 0}, x));
  const std::size_t n = x.elements;
  return levels{[q8, n](unsigned char* data, registry::exchange_comm& c, int l) {
                  if (l == 0) c.all_reduce(reinterpret_cast<float*>(data), n);
                  else (*q8)(data, c);
                },
                {},
                {},   // int8 keeps no state between iterations
                {}};
}

// An Accordion entry over `inner` whose high-compression parameters are high(q): its cost, bits
// and exchange kind are the high level's.
template <class High, class Make>
registry::compression_entry entry(std::string name, std::vector<registry::param_spec> params, const registry::compression_entry& inner, High high,
                                  Make make, std::function<std::string(const param_list&)> cpp) {
  registry::compression_entry e;
  e.name = std::move(name);
  e.params = std::move(params);
  e.applies = f32_only;
  e.exchange = inner.exchange;
  if (inner.wire_bytes)
    e.wire_bytes = [w = inner.wire_bytes, high](std::int64_t n, dtype t, int p, const param_list& q, double in) { return w(n, t, p, high(q), in); };
  if (inner.tensor_wire_bytes)
    e.tensor_wire_bytes = [w = inner.tensor_wire_bytes, high](const tensor& t, std::int64_t n, int p, const param_list& q, double in) {
      return w(t, n, p, high(q), in);
    };
  if (inner.flops_per_element) e.flops_per_element = [f = inner.flops_per_element, high](const param_list& q) { return f(high(q)); };
  if (inner.nominal_bits) e.nominal_bits = [b = inner.nominal_bits, high](const param_list& q) { return b(high(q)); };
  e.make_exchange = std::move(make);
  e.cpp_type = std::move(cpp);
  e.header = "autosync/compressors/accordion.hpp";
  return e;
}

}  // namespace accordion_detail

inline registry::compression_entry accordion_powersgd_entry() {
  namespace ad = accordion_detail;
  auto high = [](const param_list& q) { return param_list{q[1], 0, 2.0}; };
  auto e = ad::entry(
      "accordion_powersgd",
      {{"critical_rank", 2.0, 1.0, 1024.0, true}, {"rank", 1.0, 1.0, 1024.0, true}, {"interval", 100.0, 1.0, 1e12, true}}, ad::powersgd_inner(), high,
      [](const param_list& q, const registry::exchange_context& x) {
        return registry::bucket_exchange(ad::exchange(ad::powersgd_levels(q, x), static_cast<std::int64_t>(q[2]), x));
      },
      [](const param_list& q) {
        return "autosync::compressors::accordion_powersgd<" + std::to_string(static_cast<int>(q[0])) + ", " + std::to_string(static_cast<int>(q[1])) +
               ", " + std::to_string(static_cast<long long>(q[2])) + ">";
      });
  e.alternatives = {param_list{2, 1, 100}, param_list{4, 1, 100}};
  return e;
}

inline registry::compression_entry accordion_topk_entry() {
  namespace ad = accordion_detail;
  auto high = [](const param_list& q) { return param_list{q[1], 0, 0}; };
  auto e = ad::entry(
      "accordion_topk", {{"critical_density", 0.99, 1e-6, 1.0, false}, {"density", 0.1, 1e-6, 1.0, false}, {"interval", 100.0, 1.0, 1e12, true}},
      ad::topk_inner(), high,
      [](const param_list& q, const registry::exchange_context& x) {
        return registry::bucket_exchange(ad::exchange(ad::topk_levels(q, x), static_cast<std::int64_t>(q[2]), x));
      },
      [](const param_list& q) {
        return "autosync::compressors::accordion_topk<" + spell(q[0]) + ", " + spell(q[1]) + ", " + std::to_string(static_cast<long long>(q[2])) + ">";
      });
  e.alternatives = {param_list{0.99, 0.1, 100}};
  return e;
}

inline registry::compression_entry accordion_int8_entry() {
  namespace ad = accordion_detail;
  auto high = [](const param_list&) { return param_list{1024, 0, 0}; };
  auto e = ad::entry(
      "accordion_int8", {{"interval", 100.0, 1.0, 1e12, true}}, ad::int8_inner(), high,
      [](const param_list& q, const registry::exchange_context& x) {
        return registry::bucket_exchange(ad::exchange(ad::int8_levels(x), static_cast<std::int64_t>(q[0]), x));
      },
      [](const param_list& q) { return "autosync::compressors::accordion_int8<" + std::to_string(static_cast<long long>(q[0])) + ">"; });
  e.alternatives = {param_list{100, 0, 0}};
  return e;
}

inline const registry::registrar accordion_powersgd_registered{accordion_powersgd_entry()};
inline const registry::registrar accordion_topk_registered{accordion_topk_entry()};
inline const registry::registrar accordion_int8_registered{accordion_int8_entry()};

}  // namespace autosync::compressors
