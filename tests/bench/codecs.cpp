// bench_codecs: compression ratio and encode + decode throughput of every CPU codec of
// exec/codecs/ (and exec/compress.hpp's fp16 for reference), on one core, random Gaussian data,
// beside the anchor of a plain copy of the same bytes on the same core (memcpy read + write).
//
// Throughput is fp32 gradient bytes in per second of thread CPU time for one encode and one
// decode (PowerSGD: the three local steps of one matrix, without the all-reduces); the median
// of 7 repetitions. /proc/loadavg is printed: on a shared machine take the figures again
// quietly.
//
//   build/tests/bench/bench_codecs [elements=16777216]
#include <autosync/exec/codecs/int8_minmax.hpp>
#include <autosync/exec/codecs/powersgd.hpp>
#include <autosync/exec/codecs/qsgd.hpp>
#include <autosync/exec/codecs/sparsify.hpp>
#include <autosync/exec/compress.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace cx = autosync::exec::codecs;

namespace {

double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median_seconds(const std::function<void()>& f, int reps = 7) {
  std::vector<double> t;
  f();  // warm
  for (int r = 0; r < reps; ++r) {
    const double t0 = thread_seconds();
    f();
    t.push_back(thread_seconds() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? static_cast<std::size_t>(std::strtoull(argv[1], nullptr, 10)) : (1u << 24);
  std::vector<float> x(n), y(n);
  std::mt19937 g(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (auto& v : x) v = d(g);
  const double bytes = 4.0 * static_cast<double>(n);

  std::string load;
  std::getline(std::ifstream("/proc/loadavg"), load);
  std::printf("codec throughput on one core, %zu fp32 elements (%.0f MiB), load %s\n", n, bytes / (1 << 20), load.c_str());
  const double copy = median_seconds([&] { std::memcpy(y.data(), x.data(), n * 4); });
  std::printf("%-34s %8s %12s %10s\n", "codec", "ratio", "GB/s (enc+dec)", "x memcpy");
  auto row = [&](const char* name, double ratio, double secs) {
    std::printf("%-34s %7.2fx %12.2f %10.2f\n", name, ratio, bytes / secs / 1e9, copy / secs);
  };
  std::printf("%-34s %7.2fx %12.2f %10.2f   (anchor)\n", "memcpy", 1.0, bytes / copy / 1e9, 1.0);

  {
    std::vector<std::uint16_t> w(n);
    const double s = median_seconds([&] {
      for (std::size_t i = 0; i < n; ++i) w[i] = autosync::exec::to_f16(x[i]);
      for (std::size_t i = 0; i < n; ++i) y[i] = autosync::exec::from_f16(w[i]);
    });
    row("fp16 (exec/compress.hpp)", 2.0, s);
  }
  {
    namespace q8 = cx::int8_minmax;
    std::vector<unsigned char> w(q8::wire_bytes(n));
    const double s = median_seconds([&] {
      q8::encode(x, w);
      q8::decode(w, y);
    });
    row("int8 min-max, chunk 1024", bytes / static_cast<double>(w.size()), s);
  }
  for (int L : {4, 8}) {
    namespace qs = cx::qsgd;
    const auto lv = qs::uniform_levels(L);
    std::vector<unsigned char> w(qs::wire_bytes(n, L));
    const double s = median_seconds([&] {
      qs::encode(x, w, lv, cx::counter_rng(1, 2));
      qs::decode(w, y, lv);
    });
    const std::string name = "QSGD s=" + std::to_string(L) + ", bucket 8192";
    row(name.c_str(), bytes / static_cast<double>(w.size()), s);
  }
  {
    namespace qs = cx::qsgd;
    const auto lv = qs::exponential_levels(7);
    std::vector<unsigned char> w(qs::wire_bytes(n, 7));
    const double s = median_seconds([&] {
      qs::encode(x, w, lv, cx::counter_rng(1, 2));
      qs::decode(w, y, lv);
    });
    row("NUQSGD 7 levels, bucket 8192", bytes / static_cast<double>(w.size()), s);
  }
  for (bool random : {false, true}) {
    namespace sp = cx::sparsify;
    sp::state st;
    std::vector<std::uint32_t> idx;
    std::vector<float> val;
    std::vector<unsigned char> w(sp::topk_wire_bytes(n, 0.01));
    const sp::options o{.density = 0.01, .random = random};
    const double s = median_seconds([&] {
      sp::select(x, st, o, cx::counter_rng(1, 2), idx, val);
      sp::pack_pairs(idx, val, w);
      std::fill(y.begin(), y.end(), 0.0f);
      (void)sp::scatter_add(w, idx.size(), y);
    });
    const double wire = random ? static_cast<double>(sp::randk_wire_bytes(n, 0.01)) : static_cast<double>(w.size());
    row(random ? "random-k 1 % + error feedback" : "top-k 1 % + error feedback", bytes / wire, s);
  }
  {
    namespace ps = cx::powersgd;
    const std::size_t rows = 4096, cols = n / 4096;
    for (int r : {1, 4}) {
      ps::state st;
      const ps::options o{.rank = r};
      std::vector<float> p(rows * static_cast<std::size_t>(r)), q(cols * static_cast<std::size_t>(r));
      const double s = median_seconds([&] {
        ps::compute_p(x, rows, cols, st, o, 0, p);
        ps::compute_q(st, p, q);
        ps::decompress(st, p, q, 1, y, o);
      });
      const std::string name = "PowerSGD rank " + std::to_string(r) + ", " + std::to_string(rows) + " x " + std::to_string(cols);
      row(name.c_str(), static_cast<double>(rows * cols) / static_cast<double>(ps::wire_elements(rows, cols, r)), s);
    }
  }
  return 0;
}
