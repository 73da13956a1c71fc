// exec/compress.hpp: fp16/bf16 conversions against two independent references (an arithmetic
// one: scale by the quantum, std::nearbyint, scale back; and the compiler's _Float16 where it
// exists), every tie between consecutive values of both formats, round-trip bounds, error
// feedback, and the documented bound of a compressed sum.
#include <autosync/exec/compress.hpp>
#include <autosync/strategy/items.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using namespace autosync;
using namespace autosync::exec;

namespace {

// The arithmetic reference: the value a correct round-to-nearest-even conversion of `x` to a
// format with M mantissa bits, minimum normal exponent emin and maximum exponent emax gives.
double reference_round(double x, int M, int emin, int emax) {
  if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
  const double a = std::fabs(x);
  int e = std::ilogb(a);
  if (e < emin) e = emin;
  const double quantum = std::ldexp(1.0, e - M);
  const double q = std::nearbyint(a / quantum) * quantum;  // a / quantum is exact: a power-of-two scale
  const double r = q >= std::ldexp(1.0, emax + 1) ? std::numeric_limits<double>::infinity() : q;
  return std::copysign(r, x);
}
double ref_f16(double x) { return reference_round(x, 10, -14, 15); }
double ref_bf16(double x) { return reference_round(x, 7, -126, 127); }

// Both values the same, including the sign of zero and NaN-ness.
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Every finite non-negative value of a format, in increasing order, plus 2^(emax+1) at the end
// (the rounding boundary of the overflow).
template <class Widen>
std::vector<double> all_positive(std::uint16_t inf_bits, Widen widen, double beyond) {
  std::vector<double> v;
  for (std::uint32_t b = 0; b < inf_bits; ++b) v.push_back(widen(static_cast<std::uint16_t>(b)));
  v.push_back(beyond);
  return v;
}

}  // namespace

static_assert(to_f16(1.0f) == 0x3c00 && to_f16(-2.0) == 0xc000 && to_f16(65504.0f) == 0x7bff);
static_assert(to_f16(65520.0f) == 0x7c00 && to_f16(65520.0f, overflow_mode::saturate) == 0x7bff);
static_assert(to_bf16(1.0f) == 0x3f80 && to_bf16(-1.0) == 0xbf80);
static_assert(from_f16(0x7bff) == 65504.0f && from_f16(0x0001) == 0x1p-24f && from_bf16(0x0001) == 0x1p-133f);

TEST_CASE("compress: decoding every f16 and bf16 value is exact, and encoding it back is the identity") {
  std::fesetround(FE_TONEAREST);
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    const int sign = (b & 0x8000u) ? -1 : 1;
    // binary16 by its definition
    {
      const int e = static_cast<int>((b >> 10) & 31u), m = static_cast<int>(b & 1023u);
      const double v = e == 31 ? (m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity())
                               : e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
      const double want = std::copysign(v, static_cast<double>(sign));
      const float got = from_f16(h);
      REQUIRE(same(got, want));
      if (!std::isnan(want)) {
        REQUIRE(to_f16(got) == h);
        REQUIRE(to_f16(static_cast<double>(got)) == h);
      } else {
        REQUIRE((to_f16(got) & 0x7e00u) == 0x7e00u);  // a quiet NaN ...
        REQUIRE((to_f16(got) & 0x8000u) == (b & 0x8000u));  // ... of the same sign
      }
#ifdef __FLT16_MAX__
      _Float16 ref;
      static_assert(sizeof ref == 2);
      __builtin_memcpy(&ref, &h, 2);
      REQUIRE(same(static_cast<float>(ref), got));
#endif
    }
    // bfloat16: the top half of a float
    {
      const float want = std::bit_cast<float>(b << 16);
      const float got = from_bf16(h);
      REQUIRE(same(got, want));
      if (!std::isnan(want)) {
        REQUIRE(to_bf16(got) == h);
        REQUIRE(to_bf16(static_cast<double>(got)) == h);
      }
    }
  }
}

TEST_CASE("compress: every midpoint between consecutive values rounds to the even one, its neighbours to the nearer") {
  std::fesetround(FE_TONEAREST);
  struct fmt {
    const char* name;
    std::vector<double> values;
    std::uint16_t (*enc_f)(float, overflow_mode);  // NOLINT
    std::uint16_t (*enc_d)(double, overflow_mode);
    float (*dec)(std::uint16_t);
  };
  std::vector<fmt> fmts;
  fmts.push_back({"f16", all_positive(0x7c00, [](std::uint16_t b) { return double(from_f16(b)); }, 65536.0),
                  [](float x, overflow_mode m) { return to_f16(x, m); }, [](double x, overflow_mode m) { return to_f16(x, m); }, from_f16});
  fmts.push_back({"bf16", all_positive(0x7f80, [](std::uint16_t b) { return double(from_bf16(b)); }, 0x1p128),
                  [](float x, overflow_mode m) { return to_bf16(x, m); }, [](double x, overflow_mode m) { return to_bf16(x, m); }, from_bf16});
  for (const auto& f : fmts) {
    CAPTURE(f.name);
    std::size_t checked = 0;
    for (std::size_t i = 0; i + 1 < f.values.size(); ++i) {
      const double lo = f.values[i], hi = f.values[i + 1];
      const double mid = (lo + hi) / 2.0;  // exact in double (both have <= 11 significant bits)
      const bool overflow = i + 2 == f.values.size();
      const double even = overflow ? std::numeric_limits<double>::infinity() : ((i & 1u) ? hi : lo);  // bit pattern i is lo's
      const double up = overflow ? std::numeric_limits<double>::infinity() : hi;
      for (int s : {1, -1}) {
        CAPTURE(lo);
        CAPTURE(s);
        // the midpoint itself, from double and (it is a float too for these formats) from float
        REQUIRE(same(f.dec(f.enc_d(s * mid, overflow_mode::to_infinity)), s * even));
        if (static_cast<double>(static_cast<float>(mid)) == mid)
          REQUIRE(same(f.dec(f.enc_f(static_cast<float>(s * mid), overflow_mode::to_infinity)), s * even));
        // one double ulp either side
        REQUIRE(same(f.dec(f.enc_d(s * std::nextafter(mid, 0.0), overflow_mode::to_infinity)), s * lo));
        REQUIRE(same(f.dec(f.enc_d(s * std::nextafter(mid, 1e300), overflow_mode::to_infinity)), s * up));
        // one float ulp either side
        const float mf_lo = std::nextafter(static_cast<float>(mid), 0.0f);
        const float mf_hi = std::nextafter(static_cast<float>(mid), 1e30f);
        if (static_cast<double>(mf_lo) < mid && static_cast<double>(mf_lo) >= lo)
          REQUIRE(same(f.dec(f.enc_f(static_cast<float>(s) * mf_lo, overflow_mode::to_infinity)), s * lo));
        if (static_cast<double>(mf_hi) > mid && std::isfinite(mf_hi))
          REQUIRE(same(f.dec(f.enc_f(static_cast<float>(s) * mf_hi, overflow_mode::to_infinity)), s * up));
        ++checked;
      }
    }
    CHECK(checked == 2 * (f.values.size() - 1));
    // saturation replaces overflow to inf by the max finite value, and only that
    const double maxf = f.values[f.values.size() - 2], beyond = f.values.back();
    CHECK(f.dec(f.enc_d((maxf + beyond) / 2, overflow_mode::saturate)) == maxf);
    CHECK(f.dec(f.enc_d(-1e300, overflow_mode::saturate)) == -maxf);
    CHECK(f.dec(f.enc_f(std::numeric_limits<float>::infinity(), overflow_mode::saturate)) == std::numeric_limits<float>::infinity());
    CHECK(std::isnan(f.dec(f.enc_f(std::numeric_limits<float>::quiet_NaN(), overflow_mode::saturate))));
  }
}

TEST_CASE("compress: random floats and doubles agree with the arithmetic reference (and _Float16)") {
  std::fesetround(FE_TONEAREST);
  std::mt19937_64 rng(20240611);
  for (int k = 0; k < 1'000'000; ++k) {
    const auto bits = rng();
    // floats over the whole range, and concentrated on the formats' ranges
    float xf = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    if (k % 2 == 1) xf = std::ldexp(static_cast<float>(bits >> 40) / 16777216.0f, static_cast<int>(bits % 50) - 30);
    if (!std::isnan(xf)) {
      REQUIRE(same(from_f16(to_f16(xf)), ref_f16(xf)));
      REQUIRE(same(from_bf16(to_bf16(xf)), ref_bf16(xf)));
#ifdef __FLT16_MAX__
      REQUIRE(same(static_cast<float>(static_cast<_Float16>(xf)), from_f16(to_f16(xf))));
#endif
    }
    double xd = std::bit_cast<double>(bits);
    if (k % 2 == 1) xd = std::ldexp(static_cast<double>(bits >> 11) / 9007199254740992.0, static_cast<int>(bits % 300) - 150);
    if (!std::isnan(xd)) {
      REQUIRE(same(from_f16(to_f16(xd)), ref_f16(xd)));
      REQUIRE(same(from_bf16(to_bf16(xd)), ref_bf16(xd)));
    }
  }
  // double is rounded once: 1 + 2^-11 + 2^-40 is above the f16 midpoint 1 + 2^-11, but it
  // rounds to float 1 + 2^-11 exactly, which would then tie to even (1.0)
  const double x = 1.0 + 0x1p-11 + 0x1p-40;
  CHECK(from_f16(to_f16(x)) == 1.0f + 0x1p-10f);
  CHECK(from_f16(to_f16(static_cast<float>(x))) == 1.0f);
}

TEST_CASE("compress: round trip error is at most half a quantum") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  for (int k = 0; k < 200000; ++k) {
    const double x = std::ldexp(mant(rng), static_cast<int>(rng() % 60) - 40) * ((k & 1) ? -1 : 1);
    const double ef = std::fabs(static_cast<double>(from_f16(to_f16(x))) - x);
    const double eb = std::fabs(static_cast<double>(from_bf16(to_bf16(x))) - x);
    if (std::fabs(x) < 65504.0) REQUIRE(ef <= std::max(0x1p-11 * std::fabs(x), 0x1p-25));
    REQUIRE(eb <= 0x1p-8 * std::fabs(x));
  }
}

TEST_CASE("compress: wire dtypes and scales") {
  CHECK(wire_dtype(comp::fp16::value, dtype::f32) == dtype::f16);
  CHECK(wire_dtype(comp::fp16::value, dtype::f64) == dtype::f16);
  CHECK(wire_dtype(comp::bf16::value, dtype::f64) == dtype::bf16);
  CHECK_FALSE(wire_dtype(comp::none::value, dtype::f32).has_value());
  CHECK_FALSE(wire_dtype(comp::fp16::value, dtype::f16).has_value());   // already as small as the wire
  CHECK_FALSE(wire_dtype(comp::bf16::value, dtype::f16).has_value());
  CHECK_FALSE(wire_dtype(comp::fp16::value, dtype::i32).has_value());   // not floating
  CHECK_FALSE(wire_dtype(compression_id{200}, dtype::f32).has_value()); // unknown id
  // the one rule every layer shares (items, search bound, timeline, executor, codecs)
  static_assert(shrinks(dtype::f32, 2.0) && shrinks(dtype::f64, 4.0) && shrinks(dtype::bf16, 1.0));
  static_assert(!shrinks(dtype::f16, 2.0) && !shrinks(dtype::f32, 4.0) && !shrinks(dtype::f32, 0.0));
  static_assert(!shrinks(dtype::i32, 2.0) && !shrinks(dtype::i64, 1.0) && !shrinks(dtype::f32, -1.0));
  CHECK_FALSE(shrinks(dtype::f32, std::numeric_limits<double>::quiet_NaN()));
  CHECK(wire_per_element_at(dtype::f32, 2.0) == 2.0);
  CHECK(wire_per_element_at(dtype::f16, 2.0) == 2.0);
  CHECK(wire_per_element_at(dtype::i32, 2.0) == 4.0);
  CHECK(wire_per_element_at(dtype::f64, 0.0) == 8.0);
  CHECK(wire_scale(dtype::f16, 1) == 1.0);
  CHECK(wire_scale(dtype::f16, 2) == 0.5);
  CHECK(wire_scale(dtype::f16, 3) == 0.25);
  CHECK(wire_scale(dtype::f16, 4) == 0.25);
  CHECK(wire_scale(dtype::f16, 5) == 0.125);
  CHECK(wire_scale(dtype::f16, 8) == 0.125);
  CHECK(wire_scale(dtype::bf16, 8) == 1.0);
  float x = 1.0f;
  std::uint16_t w = 0;
  try {
    encode(&x, nullptr, &w, 1, dtype::f32, 1.0);
    FAIL("no error");
  } catch (const autosync::error& e) {
    CHECK(e.field() == "wire");
  }
}

TEST_CASE("compress: error feedback loses nothing over iterations") {
  SUBCASE("a gradient below half the smallest f16 subnormal is delivered over time, not dropped") {
    const float g = 1e-8f;  // < 2^-25
    const int K = 100;
    double plain = 0.0, fed = 0.0, r = 0.0;
    for (int k = 0; k < K; ++k) {
      std::uint16_t w = 0;
      float out = 0;
      encode(&g, nullptr, &w, 1, dtype::f16, 1.0);
      decode(&w, &out, 1, dtype::f16, 1.0);
      plain += out;
      encode(&g, &r, &w, 1, dtype::f16, 1.0);
      decode(&w, &out, 1, dtype::f16, 1.0);
      fed += out;
    }
    CHECK(plain == 0.0);
    // what was sent + what is still held = what came in; what is held is below one quantum
    CHECK(std::fabs(fed + r - K * static_cast<double>(g)) <= 1e-20);
    CHECK(std::fabs(r) <= 0x1p-25);
    CHECK(fed >= K * static_cast<double>(g) - 0x1p-25);
  }
  SUBCASE("what saturation cuts off is sent in the next iteration") {
    const float x[2] = {100000.0f, 0.0f};
    double r = 0.0;
    double got = 0.0;
    for (float xi : x) {
      std::uint16_t w = 0;
      float out = 0;
      encode(&xi, &r, &w, 1, dtype::f16, 1.0);
      decode(&w, &out, 1, dtype::f16, 1.0);
      got += out;
      if (xi != 0.0f) CHECK(out == 65504.0f);
    }
    CHECK(got == 100000.0);  // 65504 + 34496 (a multiple of the quantum 32 in [32768, 65536))
    CHECK(r == 0.0);
  }
  SUBCASE("telescoping over random iterations, both wire formats, float and double gradients, with a scale") {
    std::mt19937 rng(11);
    std::normal_distribution<double> N(0.0, 3.0);
    for (dtype wt : {dtype::f16, dtype::bf16}) {
      const std::size_t n = 257;
      const double s = wt == dtype::f16 ? 0.25 : 1.0;
      std::vector<double> rf(n, 0.0), rd(n, 0.0), in(n, 0.0), outf(n, 0.0), outd(n, 0.0);
      std::vector<std::uint16_t> w(n);
      std::vector<double> last_v(n, 0.0);
      for (int k = 0; k < 50; ++k) {
        std::vector<float> xf(n), df(n);
        std::vector<double> xd(n), dd(n);
        for (std::size_t i = 0; i < n; ++i) {
          xd[i] = std::ldexp(N(rng), static_cast<int>(rng() % 20) - 10);
          xf[i] = static_cast<float>(xd[i]);
          xd[i] = xf[i];  // the same values in both types
          in[i] += xd[i];
          last_v[i] = xd[i] + rd[i];  // what this iteration encodes (scaled by s on the wire)
        }
        encode(xf.data(), rf.data(), w.data(), n, wt, s);
        decode(w.data(), df.data(), n, wt, s);
        encode(xd.data(), rd.data(), w.data(), n, wt, s);
        decode(w.data(), dd.data(), n, wt, s);
        for (std::size_t i = 0; i < n; ++i) {
          outf[i] += df[i];
          outd[i] += dd[i];
        }
      }
      for (std::size_t i = 0; i < n; ++i) {
        CAPTURE(i);
        // only the double additions x + r and the running sums round
        REQUIRE(std::fabs(outf[i] + rf[i] - in[i]) <= 1e-12 * (1.0 + std::fabs(in[i])));
        REQUIRE(std::fabs(outd[i] + rd[i] - in[i]) <= 1e-12 * (1.0 + std::fabs(in[i])));
        // and the residual is at most half a quantum of the last value sent
        REQUIRE(std::fabs(rd[i]) <= unit_roundoff(wt) * std::fabs(last_v[i]) + half_min_subnormal(wt) / s);
        REQUIRE(std::fabs(rf[i] - rd[i]) <= 1e-12 * (1.0 + std::fabs(in[i])));  // float and double paths agree
      }
    }
  }
}

TEST_CASE("compress: fp16 saturates each rank at its share of the range, so no sum of p ranks overflows") {
  for (int p : {2, 3, 4, 8}) {
    CAPTURE(p);
    const double s = wire_scale(dtype::f16, p);
    // at the documented limit (every |x_r| <= 65504) nothing saturates: the bound holds
    {
      const float x = 65504.0f;
      std::uint16_t w = 0, acc = 0;
      encode(&x, nullptr, &w, 1, dtype::f16, s);
      CHECK(from_f16(w) == static_cast<float>(65504.0 * s));
      acc = w;
      for (int r = 1; r < p; ++r) acc = to_f16(from_f16(acc) + from_f16(w));
      float got = 0;
      decode(&acc, &got, 1, dtype::f16, s);
      CHECK(std::isfinite(got));
      CHECK(std::fabs(got - 65504.0 * p) <= compressed_sum_bound(dtype::f16, p, 65504.0 * p));
    }
    // beyond it (7e4 on every rank: 35008 scaled at p = 2 summed to inf before) the wire value
    // saturates at 65504 s, the sum stays finite, and the residual keeps what was cut off
    for (const float x : {7e4f, 2e5f, -3e7f}) {
      CAPTURE(x);
      double r = 0.0;
      std::uint16_t w = 0;
      encode(&x, &r, &w, 1, dtype::f16, s);
      CHECK(std::fabs(from_f16(w)) == static_cast<float>(65504.0 * s));
      CHECK(r == static_cast<double>(x) - std::copysign(65504.0, x));
      std::uint16_t acc = w;
      for (int k = 1; k < p; ++k) acc = to_f16(from_f16(acc) + from_f16(w));
      CHECK(std::isfinite(from_f16(acc)));
    }
    // inf and NaN are sent as they are (and not carried)
    for (const float x : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      double r = 0.0;
      std::uint16_t w = 0;
      encode(&x, &r, &w, 1, dtype::f16, s);
      CHECK((std::isnan(x) ? std::isnan(from_f16(w)) : from_f16(w) == x));
      CHECK(r == 0.0);
    }
  }
}

TEST_CASE("compress: a compressed sum over p ranks stays within compressed_sum_bound in any summation order") {
  std::mt19937 rng(3);
  std::normal_distribution<double> N(0.0, 1.0);
  for (dtype wt : {dtype::f16, dtype::bf16}) {
    for (int p : {2, 3, 4, 8}) {
      const double s = wire_scale(wt, p);
      double worst = 0.0;
      for (int trial = 0; trial < 20000; ++trial) {
        std::vector<double> x(static_cast<std::size_t>(p));
        double exact = 0.0, sum_abs = 0.0;
        const int e = static_cast<int>(rng() % 40) - 30;
        for (auto& v : x) {
          v = static_cast<float>(std::ldexp(N(rng), e + static_cast<int>(rng() % 4)));
          exact += v;
          sum_abs += std::fabs(v);
        }
        // each rank encodes; partial sums in f32, rounded to the wire format, in a random order
        std::vector<std::uint16_t> w(x.size());
        for (std::size_t r = 0; r < x.size(); ++r) encode(&x[r], nullptr, &w[r], 1, wt, s);
        std::shuffle(w.begin(), w.end(), rng);
        std::uint16_t acc = w[0];
        for (std::size_t r = 1; r < w.size(); ++r) {
          const float a = wt == dtype::f16 ? from_f16(acc) : from_bf16(acc);
          const float b = wt == dtype::f16 ? from_f16(w[r]) : from_bf16(w[r]);
          acc = wt == dtype::f16 ? to_f16(a + b) : to_bf16(a + b);
        }
        float got = 0;
        decode(&acc, &got, 1, wt, s);
        const double err = std::fabs(got - exact), bound = compressed_sum_bound(wt, p, sum_abs);
        REQUIRE(err <= bound);
        worst = std::max(worst, err / bound);
      }
      CAPTURE(p);
      CHECK(worst > 0.01);  // the bound is not vacuous: errors come within 100x of it
    }
  }
}
