// tests/mpi/harness.hpp — a tiny multi-rank test harness (every rank runs every case).
//
// doctest runs one process; these tests run as N MPI ranks (ctest: mpirun -np N). Each file is
// linked with harness_main.cpp, which starts MPI (exec::mpi_session), runs the registered cases
// in order on every rank and, after each case, sums the failure counts over the ranks on a
// communicator of its own, so a case that broke its communicators (timeout tests) cannot upset
// the bookkeeping. The process exits 1 on every rank when any rank failed.
//
//   TEST_CASE("ring all-reduce") {
//     auto c = comms<mpi_backend>::make(mpi_backend::world(), 2);
//     CONTEXT("n = " << n);                       // printed with every failure in this scope
//     CHECK(x == 3);  CHECK_EQ(a, b);  CHECK_THROWS_WITH(f(), "timed out");
//   }
//
// Failures print "[rank R] file:line: ... (context)". CHECK* never throw, so a failing check
// cannot make ranks take different paths through collectives. REQUIRE throws and ends the case
// on that rank: use it only where every rank fails alike. Select cases with -tc=<substring>.
#pragma once

#include <autosync/error.hpp>

#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace autosync::mpitest {

struct test_case {
  const char* name;
  void (*fn)();
  const char* file;
  int line;
};
inline std::vector<test_case>& registry() {
  static std::vector<test_case> r;
  return r;
}
struct registrar {
  registrar(const char* name, void (*fn)(), const char* file, int line) { registry().push_back({name, fn, file, line}); }
};

struct state {
  int rank = 0;
  long checks = 0, failures = 0, printed = 0;
  std::vector<std::string> context;
};
inline state& st() {
  static state s;
  return s;
}

inline void fail(const char* file, int line, const std::string& msg) {
  auto& s = st();
  ++s.failures;
  if (s.printed++ >= 20) return;  // per case: enough to diagnose, not a flood
  std::string ctx;
  for (auto& c : s.context) ctx += (ctx.empty() ? " (" : ", ") + c;
  if (!ctx.empty()) ctx += ")";
  std::fprintf(stderr, "[rank %d] %s:%d: %s%s\n", s.rank, file, line, msg.c_str(), ctx.c_str());
}

struct context_guard {
  explicit context_guard(std::string s) { st().context.push_back(std::move(s)); }
  context_guard(const context_guard&) = delete;
  context_guard& operator=(const context_guard&) = delete;
  ~context_guard() { st().context.pop_back(); }
};

struct require_failed {};

template <class F>
std::string format(F f) {
  std::ostringstream o;
  f(o);
  return o.str();
}

template <class T>
std::string show(const T& v) {
  std::ostringstream o;
  if constexpr (requires { o << v; })
    o << v;
  else
    o << "<value>";
  return o.str();
}

}  // namespace autosync::mpitest

#define AUTOSYNC_MPITEST_CAT2(a, b) a##b
#define AUTOSYNC_MPITEST_CAT(a, b) AUTOSYNC_MPITEST_CAT2(a, b)
#define AUTOSYNC_MPITEST_CASE(fn, name)                                                                       \
  static void fn();                                                                                           \
  static const ::autosync::mpitest::registrar AUTOSYNC_MPITEST_CAT(fn, _reg){name, &fn, __FILE__, __LINE__}; \
  static void fn()
#define TEST_CASE(name) AUTOSYNC_MPITEST_CASE(AUTOSYNC_MPITEST_CAT(autosync_mpitest_case_, __LINE__), name)

#define CONTEXT(...)                                                                              \
  const ::autosync::mpitest::context_guard AUTOSYNC_MPITEST_CAT(autosync_mpitest_ctx_, __LINE__)( \
      ::autosync::mpitest::format([&](std::ostream& autosync_o_) { autosync_o_ << __VA_ARGS__; }))

#define CHECK(...)                                                                         \
  do {                                                                                     \
    ++::autosync::mpitest::st().checks;                                                    \
    if (!(__VA_ARGS__)) ::autosync::mpitest::fail(__FILE__, __LINE__, "CHECK(" #__VA_ARGS__ ") failed"); \
  } while (0)

#define CHECK_EQ(a, b)                                                                                       \
  do {                                                                                                       \
    ++::autosync::mpitest::st().checks;                                                                      \
    const auto autosync_a_ = (a);                                                                            \
    const auto autosync_b_ = (b);                                                                            \
    if (!(autosync_a_ == autosync_b_))                                                                       \
      ::autosync::mpitest::fail(__FILE__, __LINE__,                                                          \
                                "CHECK_EQ(" #a ", " #b ") failed: " + ::autosync::mpitest::show(autosync_a_) + \
                                    " != " + ::autosync::mpitest::show(autosync_b_));                        \
  } while (0)

// expr must throw autosync::error whose what() contains `text`.
#define CHECK_THROWS_WITH(expr, text)                                                                             \
  do {                                                                                                            \
    ++::autosync::mpitest::st().checks;                                                                           \
    try {                                                                                                         \
      (void)(expr);                                                                                               \
      ::autosync::mpitest::fail(__FILE__, __LINE__, "CHECK_THROWS_WITH(" #expr "): nothing was thrown");          \
    } catch (const ::autosync::error& autosync_e_) {                                                              \
      if (std::string_view(autosync_e_.what()).find(text) == std::string_view::npos)                              \
        ::autosync::mpitest::fail(__FILE__, __LINE__,                                                             \
                                  std::string("CHECK_THROWS_WITH(" #expr "): '") + autosync_e_.what() +           \
                                      "' does not contain '" + (text) + "'");                                     \
    }                                                                                                             \
  } while (0)

#define REQUIRE(...)                                                                                   \
  do {                                                                                                 \
    ++::autosync::mpitest::st().checks;                                                                \
    if (!(__VA_ARGS__)) {                                                                              \
      ::autosync::mpitest::fail(__FILE__, __LINE__, "REQUIRE(" #__VA_ARGS__ ") failed");               \
      throw ::autosync::mpitest::require_failed{};                                                     \
    }                                                                                                  \
  } while (0)
