// autosync/compressors/guarantee.hpp — run a strategy's compressors against their own
// guarantees, on any trainer-facing session (autosync::session; `autosync run` calls this
// before its timed iterations when a group uses a registered lossy compressor).
//
// Every tensor is checked by what its group's compressor promises (f32 tensors; tensors of
// other dtypes, lossless compressors, fp16/bf16 and PowerSGD before its start iteration move
// small integers exactly):
//
//   exact      integer-valued gradients, one iteration: every element is the exact sum
//   conserve   topk, randomk: integer-valued gradients for 3 iterations, then zero gradients
//              until the error-feedback residuals drain (topk: at most ceil(1 / density) + 1
//              iterations; randomk: at most ceil(30 / density), the chance that an element is
//              never drawn is e^-30): the results summed over iterations equal the gradients
//              summed over iterations and ranks, exactly
//   bound      int8: one iteration of non-integer gradients; every element within
//              sum_r range_r / 510 + range(sum) / 510 (+ float slack 1e-5 of the magnitudes)
//   unbiased   qsgd, nuqsgd, alq, amq: 64 iterations of the same gradients; each element's mean
//              within 6 sigma of its sum, sigma^2 = sum_r min(gap^2 / 4, u (1 - u)) B_r^2 / 64
//              (u = |v_r,i| / B_r, B_r: rank r's norm over the checked tensors, gap: the widest
//              level step, 1 for alq and amq, whose fitted levels are not known here; any levels
//              in [0, 1] give a draw's variance at most u (1 - u) times the squared norm)
//   low rank   powersgd: zero gradients until its start iteration has passed (a start above
//              256 is checked as `exact`: it all-reduces until then), then 2 iterations of
//              gradients a_r u v^T per matrix (their sum has rank 1): relative error <= 1e-4
//   Accordion  accordion_topk as topk (conserve, at its lower density: error feedback holds in
//              both levels); accordion_powersgd as powersgd from iteration 0; accordion_int8
//              as exact (its first interval is critical: a plain all-reduce)
//
// A phase fills only the tensors it checks (the others get zeros, which every compressor
// passes as zeros). The checks are deterministic and every rank computes the same results
// (the compressors give every rank the same bits), so every rank reaches the same verdict.
// The session must sum (session_options::reduce = reduction::sum).
#pragma once

#include <autosync/compressors/common.hpp>
#include <autosync/exec/synthetic.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace autosync::compressors {

enum class check_kind : std::uint8_t { exact, conserve, bound, unbiased, low_rank };

struct guarantee_line {
  std::string compressor;   // its name
  check_kind kind = check_kind::exact;
  std::size_t tensors = 0;  // tensors checked this way
  bool ok = true;
  std::string detail;       // what was measured, or the first element that broke it
};
struct guarantee_report {
  std::vector<guarantee_line> lines;
  int iterations = 0;       // iterations the checks ran
  [[nodiscard]] bool ok() const noexcept {
    return std::all_of(lines.begin(), lines.end(), [](const guarantee_line& l) { return l.ok; });
  }
};

[[nodiscard]] constexpr std::string_view name_of(check_kind k) noexcept {
  switch (k) {
    case check_kind::conserve: return "error feedback conserves the sum exactly";
    case check_kind::bound: return "every element within the two-quantization bound";
    case check_kind::unbiased: return "unbiased: the mean over iterations converges to the sum";
    case check_kind::low_rank: return "exact on gradients whose sum has rank <= r";
    default: return "exact sums on integer-valued gradients";
  }
}

namespace guarantee_detail {

inline constexpr std::int64_t max_powersgd_start = 256;
inline constexpr int unbiased_iterations = 64;

[[nodiscard]] inline double integer(int rank, std::size_t t, std::int64_t i, int it) {
  return static_cast<double>(((rank + 3) * 11 + static_cast<std::int64_t>(t) * 7 + i * 5 + it * 13) % 41 - 20);
}
[[nodiscard]] inline double smooth(int rank, std::size_t t, std::int64_t i) {
  return std::sin(0.37 * static_cast<double>(i + 1) * (rank + 1) + static_cast<double>(t));
}
[[nodiscard]] inline double low_rank(const tensor& x, int rank, std::size_t t, std::int64_t i, int it) {
  const std::int64_t cols = x.shape.size() >= 2 && x.shape[0] > 0 ? x.elements() / x.shape[0] : 1;
  const auto row = static_cast<double>(i / cols), col = static_cast<double>(i % cols);
  return (rank + 1 + it) * std::sin(0.3 * row + 1.0 + static_cast<double>(t)) * std::cos(0.17 * col + 0.2);
}

// What checks tensor t: from its group's compressor (the first group holding a piece of it).
struct plan_of_checks {
  std::vector<check_kind> kind;          // per tensor
  std::vector<std::string> compressor;   // per tensor
  std::vector<double> density, gap;      // per tensor: topk/randomk density, qsgd level gap
  std::int64_t powersgd_start = 0;       // the largest start among low_rank tensors
};

[[nodiscard]] inline plan_of_checks classify(const model_spec& m, const strategy_desc& s) {
  plan_of_checks pc;
  const auto T = m.tensors.size();
  pc.kind.assign(T, check_kind::exact);
  pc.compressor.assign(T, "none");
  pc.density.assign(T, 1.0);
  pc.gap.assign(T, 1.0);
  for (std::size_t t = 0; t < T && t < s.assignments.size(); ++t) {
    const auto& a = s.assignments[t];
    const auto gi = static_cast<std::size_t>(a.split() ? a.shard_groups.front() : a.group);
    if (gi >= s.groups.size()) continue;
    const auto& cv = s.groups[gi].compression;
    pc.compressor[t] = compression_name(cv);
    if (!is_extension_id(cv.id) || m.tensors[t].type != dtype::f32) continue;
    const auto& n = pc.compressor[t];
    if (n == "topk" || n == "randomk") pc.kind[t] = check_kind::conserve, pc.density[t] = cv.params[0];
    else if (n == "accordion_topk") pc.kind[t] = check_kind::conserve, pc.density[t] = std::min(cv.params[0], cv.params[1]);
    else if (n == "accordion_powersgd") pc.kind[t] = check_kind::low_rank;  // from iteration 0, at either rank
    else if (n == "int8") pc.kind[t] = check_kind::bound;
    else if (n == "qsgd" || n == "nuqsgd" || n == "alq" || n == "amq") {
      pc.kind[t] = check_kind::unbiased;
      pc.gap[t] = n == "qsgd" ? 1.0 / cv.params[0] : n == "nuqsgd" ? 0.5 : 1.0;
    } else if (n == "powersgd") {
      const auto start = static_cast<std::int64_t>(cv.params[1]);
      if (start <= max_powersgd_start) {
        pc.kind[t] = check_kind::low_rank;
        pc.powersgd_start = std::max(pc.powersgd_start, start);
      }
    }
  }
  return pc;
}

}  // namespace guarantee_detail

// Runs the checks on session `s` (which must sum) from its current state; call it before any
// other iteration, so error-feedback residuals start empty.
template <class Session>
[[nodiscard]] guarantee_report check_guarantees(Session& s) {
  namespace gd = guarantee_detail;
  const model_spec& m = s.model();
  const int p = s.world_size(), me = s.rank();
  const auto T = m.tensors.size();
  const auto pc = gd::classify(m, s.strategy());
  guarantee_report rep;
  std::vector<std::vector<unsigned char>> bufs(T);
  std::vector<exec::gradient> grads(T);
  for (std::size_t t = 0; t < T; ++t) {
    const auto n = m.tensors[t].elements();
    bufs[t].assign(static_cast<std::size_t>(n) * size_of(m.tensors[t].type), 0);
    grads[t] = exec::gradient{bufs[t].data(), m.tensors[t].type, n};
  }
  const auto order = m.backward_order();
  auto get = [&](std::size_t t, std::int64_t i) { return exec::load_element(bufs[t].data(), i, m.tensors[t].type); };
  // one iteration: tensors of kind k get value(rank, t, i), the others zero
  auto step = [&](check_kind k, auto&& value) {
    for (std::size_t t = 0; t < T; ++t)
      for (std::int64_t i = 0; i < grads[t].count; ++i)
        exec::store_element(bufs[t].data(), i, m.tensors[t].type, pc.kind[t] == k ? value(me, t, i) : 0.0);
    s.begin(std::span<const exec::gradient>(grads));
    for (auto t : order) s.ready(t);
    (void)s.finish();
    ++rep.iterations;
  };
  auto line = [&](check_kind k) -> guarantee_line& {
    rep.lines.push_back({});
    auto& l = rep.lines.back();
    l.kind = k;
    std::string names;
    for (std::size_t t = 0; t < T; ++t)
      if (pc.kind[t] == k) {
        ++l.tensors;
        if (names.find(pc.compressor[t]) == std::string::npos) names += (names.empty() ? "" : ", ") + pc.compressor[t];
      }
    l.compressor = names;
    return l;
  };
  auto where = [&](std::size_t t, std::int64_t i, double got, double want) {
    char v[96];
    std::snprintf(v, sizeof v, ": got %.9g, want %.9g", got, want);
    return "tensor '" + m.tensors[t].name + "' element " + std::to_string(i) + v;
  };
  auto any = [&](check_kind k) { return std::find(pc.kind.begin(), pc.kind.end(), k) != pc.kind.end(); };
  auto fmt = [](const char* f, double a, double b) {
    char v[128];
    std::snprintf(v, sizeof v, f, a, b);
    return std::string(v);
  };

  // exact
  if (any(check_kind::exact)) {
    step(check_kind::exact, [&](int r, std::size_t t, std::int64_t i) { return gd::integer(r, t, i, 0); });
    auto& l = line(check_kind::exact);
    for (std::size_t t = 0; t < T && l.ok; ++t)
      for (std::int64_t i = 0; i < grads[t].count && pc.kind[t] == check_kind::exact && l.ok; ++i) {
        double want = 0.0;
        for (int r = 0; r < p; ++r) want += gd::integer(r, t, i, 0);
        if (get(t, i) != want) l.ok = false, l.detail = where(t, i, get(t, i), want);
      }
    if (l.ok) l.detail = "every element exact";
  }
  // conserve
  if (any(check_kind::conserve)) {
    std::vector<std::vector<double>> got(T), want(T);
    for (std::size_t t = 0; t < T; ++t)
      if (pc.kind[t] == check_kind::conserve) got[t].assign(static_cast<std::size_t>(grads[t].count), 0.0), want[t] = got[t];
    int limit = 0;
    for (std::size_t t = 0; t < T; ++t)
      if (pc.kind[t] == check_kind::conserve)
        limit = std::max(limit, static_cast<int>(std::ceil((pc.compressor[t] == "randomk" ? 30.0 : 1.0) / pc.density[t])) + 1);
    const int data = 3;
    bool drained = false;
    int it = 0;
    for (; it < data + limit && !drained; ++it) {
      const bool with_data = it < data;
      step(check_kind::conserve, [&](int r, std::size_t t, std::int64_t i) { return with_data ? gd::integer(r, t, i, it) : 0.0; });
      drained = !with_data;
      for (std::size_t t = 0; t < T; ++t)
        for (std::int64_t i = 0; i < grads[t].count && pc.kind[t] == check_kind::conserve; ++i) {
          const auto k = static_cast<std::size_t>(i);
          if (with_data)
            for (int r = 0; r < p; ++r) want[t][k] += gd::integer(r, t, i, it);
          got[t][k] += get(t, i);
          drained = drained && got[t][k] == want[t][k];
        }
    }
    auto& l = line(check_kind::conserve);
    l.ok = drained;
    if (drained) l.detail = "sums equal after " + std::to_string(it) + " iterations (" + std::to_string(data) + " with data)";
    for (std::size_t t = 0; t < T && !l.ok && l.detail.empty(); ++t)
      for (std::size_t k = 0; k < got[t].size(); ++k)
        if (got[t][k] != want[t][k]) {
          l.detail = where(t, static_cast<std::int64_t>(k), got[t][k], want[t][k]) + " after " + std::to_string(it) + " iterations";
          break;
        }
  }
  // bound
  if (any(check_kind::bound)) {
    step(check_kind::bound, [&](int r, std::size_t t, std::int64_t i) { return gd::smooth(r, t, i); });
    double ranges = 0.0, scale = 0.0, smin = 1e300, smax = -1e300;
    for (int r = 0; r < p; ++r) {
      double mn = 1e300, mx = -1e300;
      for (std::size_t t = 0; t < T; ++t)
        for (std::int64_t i = 0; i < grads[t].count && pc.kind[t] == check_kind::bound; ++i)
          mn = std::min(mn, gd::smooth(r, t, i)), mx = std::max(mx, gd::smooth(r, t, i));
      ranges += mx - mn;
      scale += std::max(std::abs(mn), std::abs(mx));
    }
    std::vector<double> sums;
    double worst = 0.0;
    std::string first;
    for (std::size_t t = 0; t < T; ++t)
      for (std::int64_t i = 0; i < grads[t].count && pc.kind[t] == check_kind::bound; ++i) {
        double want = 0.0;
        for (int r = 0; r < p; ++r) want += gd::smooth(r, t, i);
        smin = std::min(smin, want), smax = std::max(smax, want);
        const double e = std::abs(get(t, i) - want);
        if (e > worst) worst = e, first = where(t, i, get(t, i), want);
      }
    const double bound = ranges / 510.0 + (smax - smin) / 510.0 + 1e-5 * (scale + p);
    auto& l = line(check_kind::bound);
    l.ok = worst <= bound;
    l.detail = fmt("worst error %.3g, bound %.3g", worst, bound) + (l.ok ? "" : " (" + first + ")");
  }
  // unbiased
  if (any(check_kind::unbiased)) {
    const int n = gd::unbiased_iterations;
    std::vector<std::vector<double>> mean(T);
    for (std::size_t t = 0; t < T; ++t)
      if (pc.kind[t] == check_kind::unbiased) mean[t].assign(static_cast<std::size_t>(grads[t].count), 0.0);
    for (int it = 0; it < n; ++it) {
      step(check_kind::unbiased, [&](int r, std::size_t t, std::int64_t i) { return gd::smooth(r, t, i); });
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t k = 0; k < mean[t].size(); ++k) mean[t][k] += get(t, static_cast<std::int64_t>(k)) / n;
    }
    // B_r: rank r's norm over every checked tensor, >= the norm of any quantization bucket
    // (the other tensors hold zeros in this phase)
    std::vector<double> B(static_cast<std::size_t>(p), 0.0);
    for (int r = 0; r < p; ++r) {
      for (std::size_t t = 0; t < T; ++t)
        for (std::int64_t i = 0; i < grads[t].count && pc.kind[t] == check_kind::unbiased; ++i) B[static_cast<std::size_t>(r)] += gd::smooth(r, t, i) * gd::smooth(r, t, i);
      B[static_cast<std::size_t>(r)] = std::sqrt(B[static_cast<std::size_t>(r)]);
    }
    // per element: one draw's variance is ||v||^2 (l_j+1 - u)(u - l_j) <= min(gap^2 / 4, u (1 - u)) ||v||^2
    // (levels in [0, 1]), summed over the ranks; the mean of n draws within 6 sigma of the sum
    double worst = 0.0;  // error over bound
    std::string first;
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t k = 0; k < mean[t].size(); ++k) {
        double want = 0.0, var = 0.0, mag = 0.0;
        for (int r = 0; r < p; ++r) {
          const double v = gd::smooth(r, t, static_cast<std::int64_t>(k)), a = std::abs(v), b = B[static_cast<std::size_t>(r)];
          want += v;
          mag += a;
          var += std::min(pc.gap[t] * pc.gap[t] * b * b / 4.0, a * std::max(b - a, 0.0));
        }
        const double bound = 6.0 * std::sqrt(var / n) + 1e-5 * (1.0 + mag);
        const double e = std::abs(mean[t][k] - want) / bound;
        if (e > worst) {
          char sb[48];
          std::snprintf(sb, sizeof sb, " (6 sigma %.3g)", bound);
          worst = e;
          first = where(t, static_cast<std::int64_t>(k), mean[t][k], want) + sb;
        }
      }
    auto& l = line(check_kind::unbiased);
    l.ok = worst <= 1.0;
    l.detail = fmt("mean of 64 iterations: worst error %.3g of its element's 6 sigma (%g draws each)", worst, static_cast<double>(n)) + (l.ok ? "" : " (" + first + ")");
  }
  // low rank
  if (any(check_kind::low_rank)) {
    while (rep.iterations < pc.powersgd_start) step(check_kind::low_rank, [](int, std::size_t, std::int64_t) { return 0.0; });
    auto& l = line(check_kind::low_rank);
    double worst_rel = 0.0;
    for (int it = 0; it < 2 && l.ok; ++it) {
      auto value = [&](int r, std::size_t t, std::int64_t i) {
        return m.tensors[t].shape.size() >= 2 ? gd::low_rank(m.tensors[t], r, t, i, it) : gd::integer(r, t, i, it);
      };
      step(check_kind::low_rank, value);
      for (std::size_t t = 0; t < T && l.ok; ++t) {
        if (pc.kind[t] != check_kind::low_rank) continue;
        double big = 0.0, worst = 0.0;
        std::string first;
        for (std::int64_t i = 0; i < grads[t].count; ++i) {
          double want = 0.0;
          for (int r = 0; r < p; ++r) want += value(r, t, i);
          big = std::max(big, std::abs(want));
          const double e = std::abs(get(t, i) - want);
          if (e > worst) worst = e, first = where(t, i, get(t, i), want);
        }
        const bool one_d = m.tensors[t].shape.size() < 2;
        if (one_d ? worst != 0.0 : worst > 1e-4 * big) l.ok = false, l.detail = first;
        if (big > 0.0) worst_rel = std::max(worst_rel, worst / big);
      }
    }
    if (l.ok) l.detail = fmt("worst relative error %.3g (bound %.0e)", worst_rel, 1e-4);
  }
  return rep;
}

}  // namespace autosync::compressors
