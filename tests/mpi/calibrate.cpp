// exec/calibrate.hpp: the ring fit recovers known constants exactly; calibrate() on the MPI
// backend gives every rank the same positive constants and a cluster that carries them.
#include "harness.hpp"

#include <autosync/cost/fabric.hpp>
#include <autosync/exec/calibrate.hpp>
#include <autosync/exec/mpi/backend.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace autosync;
using namespace autosync::exec;

namespace {

// Ring all-reduce time of the one-node model: 2(p-1) alpha + 2(p-1)/p S beta + (p-1)/p S gamma.
double ring(int p, double bytes, double alpha, double bandwidth, double reduce) {
  const double pd = p;
  return 2 * (pd - 1) * alpha + 2 * (pd - 1) / pd * bytes / bandwidth + (pd - 1) / pd * bytes / reduce;
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::fabs(b); }

std::string field_of(auto&& f) {
  try {
    f();
  } catch (const autosync::error& e) {
    return e.field();
  }
  return "no error";
}

}  // namespace

TEST_CASE("calibrate: the ring fit recovers latency and bandwidth from exact model times") {
  for (int p : {2, 3, 4, 8}) {
    CONTEXT("p=" << p);
    const double alpha = 7e-6, bw = 3e9, red = 5e9;
    std::vector<calibration::sample> s;
    for (std::size_t b : {std::size_t{16} << 20, std::size_t{4} << 10, std::size_t{1} << 20, std::size_t{64} << 10, std::size_t{4} << 20})
      s.push_back({b, 10, ring(p, static_cast<double>(b), alpha, bw, red), 0.0});
    const auto k = fit_ring(p, s, red);
    CHECK(k.ranks == p);
    CHECK(close(k.latency, alpha));
    CHECK(close(k.bandwidth, bw));
    CHECK(k.reduce_bandwidth == red);
    REQUIRE(k.samples.size() == 5);
    CHECK(k.samples.front().bytes == (std::size_t{4} << 10));  // sorted by size
    for (const auto& x : k.samples) CHECK(close(x.fitted, x.measured));
  }
}

TEST_CASE("calibrate: small sizes faster per byte (caches) do not bend the bandwidth of the large ones") {
  // below 1 MiB the times are 30% under the line; the slope comes from 1, 4, 16 MiB
  const int p = 4;
  const double alpha = 5e-6, bw = 1e9, red = 4e9;
  std::vector<calibration::sample> s;
  for (std::size_t b : {std::size_t{4} << 10, std::size_t{64} << 10, std::size_t{256} << 10, std::size_t{1} << 20, std::size_t{4} << 20,
                        std::size_t{16} << 20}) {
    double t = ring(p, static_cast<double>(b), alpha, bw, red);
    if (b < (std::size_t{1} << 20)) t = 2 * (p - 1) * alpha + 0.7 * (t - 2 * (p - 1) * alpha);
    s.push_back({b, 10, t, 0.0});
  }
  const auto k = fit_ring(p, s, red);
  CHECK(close(k.bandwidth, bw));
  CHECK(k.latency >= 0.0);
  CHECK(k.latency <= alpha);
}

TEST_CASE("calibrate: bad inputs name their field") {
  std::vector<calibration::sample> one{{4096, 1, 1e-5, 0.0}}, two{{4096, 1, 1e-5, 0.0}, {8192, 1, 2e-5, 0.0}};
  CHECK(field_of([&] { (void)fit_ring(1, two, 1e9); }) == "ranks");
  CHECK(field_of([&] { (void)fit_ring(4, one, 1e9); }) == "sizes");
  CHECK(field_of([&] { (void)fit_ring(4, two, 0.0); }) == "reduce_bandwidth");
  two[1].measured = 0.0;
  CHECK(field_of([&] { (void)fit_ring(4, two, 1e9); }) == "samples");
  calibration k;
  k.ranks = 4;
  CHECK(field_of([&] { (void)calibrated_cluster(k, "here"); }) == "calibration");
}

TEST_CASE("calibrate on MPI: positive constants, the same on every rank, carried by the cluster") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  const int p = c.world.size();
  calibrate_options o;
  o.sizes = {std::size_t{4} << 10, std::size_t{64} << 10, std::size_t{256} << 10};
  o.budget_s = 0.02;
  o.min_reps = 2;
  o.max_reps = 5;
  o.reduce_bytes = std::size_t{1} << 20;
  o.reduce_reps = 2;
  o.codec_bytes = std::size_t{256} << 10;
  const auto k = calibrate(c, o);
  CHECK(k.ranks == p);
  CHECK(k.latency >= 0.0);
  CHECK(k.bandwidth > 0.0);
  CHECK(k.reduce_bandwidth > 0.0);
  // the fp16 codec's rate: some core's, between a 1 GHz scalar loop's and one element per 0.1 ns
  CHECK(k.codec_flops > 2e7);
  CHECK(k.codec_flops < 2e10);
  REQUIRE(k.samples.size() == 3);
  for (const auto& x : k.samples) CHECK(x.measured > 0.0 && x.reps >= 2 && x.reps <= 5);
  std::vector<double> mine{k.latency, k.bandwidth, k.reduce_bandwidth, k.samples[0].measured, k.codec_flops}, all(5 * static_cast<std::size_t>(p));
  c.world.all_gather(mine.data(), all.data(), 5, dtype::f64);
  for (int r = 0; r < p; ++r)
    for (std::size_t i = 0; i < 5; ++i) CHECK(all[static_cast<std::size_t>(r) * 5 + i] == mine[i]);
  const auto cl = calibrated_cluster(k, "test");
  CHECK(cl.name == "local-" + std::to_string(p) + "-calibrated");
  CHECK(cl.world_size() == p);
  REQUIRE(cl.nodes.size() == 1);
  CHECK(cl.nodes[0].intra.latency == k.latency);
  CHECK(cl.nodes[0].intra.bandwidth == k.bandwidth);
  CHECK(cl.nodes[0].reduce_bandwidth == k.reduce_bandwidth);
  CHECK(cl.nodes[0].codec_flops == k.codec_flops);
  CHECK(cost::make_fabric(cl).codec_flops == k.codec_flops);
  CHECK(cl.source.find("test") != std::string::npos);
  o.codec_bytes = 0;  // not timed: the backend's default
  const auto k0 = calibrate(c, o);
  CHECK(k0.codec_flops == 0.0);
  CHECK(cost::make_fabric(calibrated_cluster(k0, "test")).codec_flops == cost::host_codec_flops);
}
