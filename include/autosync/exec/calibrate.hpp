// autosync/exec/calibrate.hpp — measure this host's transport and write it as a cluster.
//
// The presets' constants (zoo/clusters.hpp) describe typical hardware; on a given machine the
// cost model is only as good as they fit it. `calibrate(comms)` measures, on any Backend, with
// every rank of the communicator taking part:
//
//   reduce_bandwidth   every rank at once (a barrier before each repetition) sums a 16 MiB f32
//                      buffer into another (sum_into, the reduction the collectives use): bytes
//                      summed per second, from the median over `reduce_reps` of the slowest
//                      rank (ranks that share cores measure that too, as in a ring step);
//   codec_flops        every rank at once encodes (with error feedback) and decodes a 4 MiB f32
//                      buffer through the executor's fp16 codec (exec/compress.hpp): 2 units of
//                      the compressors' work per element over the slowest rank's median time
//                      (cost/fabric.hpp codec_rate);
//   ring all-reduce    exec::all_reduce with the ring topology on one f32 buffer of each size
//                      in `sizes` (4 KiB .. 16 MiB by default), the median over repetitions of
//                      the slowest rank's time;
//
// and fits the cost model's one-node ring (cost/collectives.hpp; one node: every collective
// runs on the intra link)
//
//   t(S) = 2(p-1) alpha + 2(p-1)/p S beta + (p-1)/p S gamma,      gamma = 1 / reduce_bandwidth
//
// for alpha (latency per ring step) and beta (1 / link bandwidth): beta from the least-squares
// slope of the sizes >= `bandwidth_from` (1 MiB: the buckets of real models are that large, and
// caches make smaller sizes faster per byte than the bandwidth of the big ones), alpha from the
// smallest size once its bytes are paid for; alpha >= 0, beta > 0. `calibrated_cluster` puts the four numbers (with codec_flops) into zoo::local(p)'s
// node (name "local-<p>-calibrated", the source saying what was measured, when and where), so
// `autosync optimize/run --cluster file.json` cost strategies with this host's constants.
// The fit's prediction is kept next to each measurement (`samples`), so its quality is visible.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/collectives.hpp>
#include <autosync/exec/compress.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/topology.hpp>
#include <autosync/zoo/clusters.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace autosync::exec {

struct calibrate_options {
  std::vector<std::size_t> sizes{std::size_t{4} << 10, std::size_t{64} << 10, std::size_t{1} << 20, std::size_t{4} << 20,
                                 std::size_t{16} << 20};  // bytes per ring all-reduce (f32)
  double budget_s = 1.5;        // seconds of repetitions per size (at least min_reps)
  int min_reps = 5, max_reps = 200;
  std::size_t bandwidth_from = std::size_t{1} << 20;  // sizes that fit the bandwidth
  std::size_t reduce_bytes = std::size_t{16} << 20;
  int reduce_reps = 7;
  std::size_t codec_bytes = std::size_t{4} << 20;  // f32 bytes the fp16 codec encodes and decodes (0: not timed)
};

struct calibration {
  struct sample {
    std::size_t bytes = 0;
    int reps = 0;
    double measured = 0.0;   // seconds: median over repetitions of the slowest rank
    double fitted = 0.0;     // seconds: the fitted model at this size
  };
  int ranks = 0;
  double latency = 0.0;           // alpha: seconds per ring step
  double bandwidth = 0.0;         // 1 / beta: bytes/s of one rank's link
  double reduce_bandwidth = 0.0;  // 1 / gamma: bytes/s one rank sums
  double codec_flops = 0.0;       // the fp16 codec's work/s (2 units per element; 0: not measured)
  std::vector<sample> samples;
};

namespace calibrate_detail {

// The slowest rank's value of each element (the backend only sums: gather, then take the max).
template <Backend B>
std::vector<double> max_over_ranks(B& w, const std::vector<double>& mine) {
  const auto p = static_cast<std::size_t>(w.size());
  std::vector<double> all(mine.size() * p);
  w.all_gather(mine.data(), all.data(), mine.size(), dtype::f64);
  std::vector<double> out(mine.size(), 0.0);
  for (std::size_t r = 0; r < p; ++r)
    for (std::size_t i = 0; i < mine.size(); ++i) out[i] = std::max(out[i], all[r * mine.size() + i]);
  return out;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace calibrate_detail

// The fit alone: alpha and beta from ring all-reduce times at sizes `bytes` on p ranks, gamma
// known. y = t - (p-1)/p S gamma = A + B S with A = 2(p-1) alpha, B = 2(p-1)/p beta: B is the
// least-squares slope over the samples of at least `bandwidth_from` bytes (all samples when fewer
// than two are that large), A = y of the smallest sample - B S, clamped to >= 0.
[[nodiscard]] inline calibration fit_ring(int p, std::vector<calibration::sample> samples, double reduce_bandwidth,
                                          std::size_t bandwidth_from = std::size_t{1} << 20) {
  if (p < 2) throw error("ranks", "calibrate: a link needs at least 2 ranks, got " + std::to_string(p));
  if (samples.size() < 2) throw error("sizes", "calibrate: at least two sizes are needed to separate latency from bandwidth");
  if (!(reduce_bandwidth > 0.0)) throw error("reduce_bandwidth", "calibrate: must be > 0");
  std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  if (samples.front().bytes == samples.back().bytes) throw error("sizes", "calibrate: at least two different sizes are needed");
  const double pd = p, gamma = 1.0 / reduce_bandwidth;
  auto y = [&](const calibration::sample& s) { return s.measured - (pd - 1) / pd * static_cast<double>(s.bytes) * gamma; };
  for (const auto& s : samples)
    if (!(s.measured > 0.0)) throw error("samples", "calibrate: a measured time is not > 0");
  const auto large = std::count_if(samples.begin(), samples.end(), [&](const auto& s) { return s.bytes >= bandwidth_from; });
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& s : samples) {
    if (large >= 2 && s.bytes < bandwidth_from) continue;
    const double x = static_cast<double>(s.bytes);
    n += 1, sx += x, sy += y(s), sxx += x * x, sxy += x * y(s);
  }
  double B = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  if (!(B > 0.0)) B = std::max(y(samples.back()), 0.0) / static_cast<double>(samples.back().bytes);
  if (!(B > 0.0)) B = 2.0 * (pd - 1) / pd * gamma / 100.0;  // the sums explain all the time: a link 100x faster than them
  const double A = std::max(0.0, y(samples.front()) - B * static_cast<double>(samples.front().bytes));
  calibration k;
  k.ranks = p;
  k.latency = A / (2.0 * (pd - 1));
  k.bandwidth = 2.0 * (pd - 1) / pd / B;
  k.reduce_bandwidth = reduce_bandwidth;
  for (auto& s : samples) {
    const double x = static_cast<double>(s.bytes);
    s.fitted = A + B * x + (pd - 1) / pd * x * gamma;
  }
  k.samples = std::move(samples);
  return k;
}

// Measures and fits (see the header comment). Every rank of c.world must call it; every rank
// gets the same result.
template <Backend B>
[[nodiscard]] calibration calibrate(comms<B>& c, const calibrate_options& o = {}) {
  static_assert(host_memory_backend<B>, "autosync: calibrate: the reduction is timed on host memory (a host-memory Backend)");
  using clock = std::chrono::steady_clock;
  auto secs = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  auto& w = c.world;
  const int p = w.size();
  if (p < 2) throw error("ranks", "calibrate: a link needs at least 2 ranks, got " + std::to_string(p));
  if (o.min_reps < 1 || o.max_reps < o.min_reps) throw error("reps", "calibrate: need 1 <= min_reps <= max_reps");
  if (o.reduce_reps < 1 || o.reduce_bytes < 4) throw error("reduce_bytes", "calibrate: need reduce_reps >= 1 and reduce_bytes >= 4");
  for (auto s : o.sizes)
    if (s < 4) throw error("sizes", "calibrate: every size must hold at least one f32 (4 bytes)");

  // 1. reduction bandwidth, every rank at once
  const std::size_t rn = o.reduce_bytes / 4;
  std::vector<float> dst(rn, 0.0f), src(rn, 0.0f);
  std::vector<double> sums(static_cast<std::size_t>(o.reduce_reps));
  sum_into(dst.data(), src.data(), rn, dtype::f32);  // first touch
  for (auto& x : sums) {
    w.barrier();
    const auto t0 = clock::now();
    sum_into(dst.data(), src.data(), rn, dtype::f32);
    x = secs(clock::now() - t0);
  }
  const double slowest = calibrate_detail::median(calibrate_detail::max_over_ranks(w, sums));
  const double reduce_bandwidth = static_cast<double>(rn * 4) / std::max(slowest, 1e-12);
  dst = {};
  src = {};

  // 2. the codec: the executor's fp16 encode (with error feedback) and decode, every rank at once
  double codec_flops = 0.0;
  if (const std::size_t cn = o.codec_bytes / 4; cn > 0) {
    std::vector<float> x(cn), y(cn);
    std::vector<double> residual(cn, 0.0);
    std::vector<std::uint16_t> wire(cn);
    // gradient-like values (Gaussian, 1e-3): the conversions branch on each value, so a regular
    // pattern the branch predictor learns would time them twice as fast as real gradients
    std::mt19937_64 gen(12345);
    std::normal_distribution<float> normal(0.0f, 1e-3f);
    for (auto& v : x) v = normal(gen);
    std::vector<double> t(static_cast<std::size_t>(o.reduce_reps));
    encode(x.data(), residual.data(), wire.data(), cn, dtype::f16, 1.0);  // first touch
    for (auto& s : t) {
      w.barrier();
      const auto t0 = clock::now();
      encode(x.data(), residual.data(), wire.data(), cn, dtype::f16, 1.0);
      decode(wire.data(), y.data(), cn, dtype::f16, 1.0);
      s = secs(clock::now() - t0);
    }
    const double codec_s = calibrate_detail::median(calibrate_detail::max_over_ranks(w, t));
    codec_flops = 2.0 * static_cast<double>(cn) / std::max(codec_s, 1e-12);
  }

  // 3. ring all-reduce per size
  const topology_value ring{topology_kind::ring, topology_kind::ring, topology_kind::ring};
  std::vector<calibration::sample> samples;
  for (std::size_t bytes : o.sizes) {
    const std::size_t n = bytes / 4;
    std::vector<float> buf(n, 0.0f);  // zeros stay zeros: no overflow, no denormals
    auto once = [&] {
      w.barrier();
      const auto t0 = clock::now();
      all_reduce(c, buf.data(), n, dtype::f32, ring);
      return secs(clock::now() - t0);
    };
    (void)once();  // first touch, connection set-up
    const double warm = calibrate_detail::max_over_ranks(w, {once()})[0];
    std::vector<double> reps{static_cast<double>(std::clamp(static_cast<int>(o.budget_s / std::max(warm, 1e-9)), o.min_reps, o.max_reps))};
    w.broadcast(reps.data(), 1, dtype::f64, 0);  // every rank runs rank 0's count
    const int count = static_cast<int>(reps[0]);
    std::vector<double> t(static_cast<std::size_t>(count));
    for (auto& x : t) x = once();
    samples.push_back({bytes, count, calibrate_detail::median(calibrate_detail::max_over_ranks(w, t)), 0.0});
  }
  auto k = fit_ring(p, std::move(samples), reduce_bandwidth, o.bandwidth_from);
  k.codec_flops = codec_flops;
  return k;
}

// zoo::local(k.ranks) with the measured link and reduction rate: name "local-<p>-calibrated",
// `where` (host, date) in its source. The NIC and the device FLOP/s stay the preset's (one node:
// no collective crosses the NIC; calibrate measures no compute).
[[nodiscard]] inline cluster_spec calibrated_cluster(const calibration& k, std::string_view where) {
  if (!(k.latency >= 0.0) || !(k.bandwidth > 0.0) || !(k.reduce_bandwidth > 0.0))
    throw error("calibration", "calibrated_cluster: latency must be >= 0, bandwidth and reduce_bandwidth > 0");
  cluster_spec c = zoo::local(k.ranks);
  c.name += "-calibrated";
  c.source = "autosync calibrate: " + std::to_string(k.ranks) + " ranks, ring all-reduce " +
             std::to_string(k.samples.empty() ? 0 : k.samples.front().bytes) + ".." +
             std::to_string(k.samples.empty() ? 0 : k.samples.back().bytes) + " bytes fitted, sum_into and the fp16 codec timed; " + std::string(where);
  for (auto& n : c.nodes) {
    n.intra.latency = k.latency;
    n.intra.bandwidth = k.bandwidth;
    n.reduce_bandwidth = k.reduce_bandwidth;
    n.codec_flops = k.codec_flops;  // 0 (not measured): the backend's default
  }
  c.validate();
  return c;
}

}  // namespace autosync::exec
