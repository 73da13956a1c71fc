// tests/cuda/nccl_host.cpp — what of the NCCL backend can be checked without a GPU (CI):
//   - nccl_backend satisfies exec::Backend; the executor picks its bucket runner;
//   - the padded layout of uneven reduce-scatter / all-gather is even_shard's layout;
//   - dtypes map to the NCCL types of the same width and kind;
//   - an empty backend and bad arguments throw autosync::error naming the field;
//   - without a usable device, init / bootstrap throw error("device") saying so (no crash, no hang);
//   - the tuner pin path: what NCCL runs per flat topology, and a pin reaching the plugin library
//     named by NCCL_TUNER_PLUGIN, filed under the commId of the next init.
#include <doctest/doctest.h>

#include <autosync/exec/nccl/backend.hpp>
#include <autosync/plugin/nccl_tuner.hpp>
#include <autosync/policy/partitioner.hpp>

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdlib>

#include <string>
#include <type_traits>

using namespace autosync;
using namespace autosync::exec;

static_assert(Backend<nccl_backend>);
static_assert(std::is_same_v<autosync::exec::detail::bucket_runner_of<nccl_backend>::type, nccl::bucket_runner>,
              "the executor runs NCCL buckets through nccl::bucket_runner");

TEST_CASE("the padded layout holds even_shard's blocks") {
  for (std::size_t n = 0; n < 200; ++n)
    for (int p = 1; p <= 9; ++p) {
      const nccl_detail::padded l(n, p);
      std::size_t total = 0;
      for (int r = 0; r < p; ++r) {
        const auto s = even_shard(static_cast<std::int64_t>(n), p, r);
        REQUIRE(l.begin(r) == static_cast<std::size_t>(s.begin));
        REQUIRE(l.size(r) == static_cast<std::size_t>(s.end - s.begin));
        REQUIRE(l.size(r) <= l.pad);  // every block fits its padded slot
        total += l.size(r);
      }
      REQUIRE(total == n);
    }
}

TEST_CASE("dtypes map to NCCL types") {
  CHECK(nccl_detail::type_of(dtype::f32) == ncclFloat32);
  CHECK(nccl_detail::type_of(dtype::f64) == ncclFloat64);
  CHECK(nccl_detail::type_of(dtype::f16) == ncclFloat16);
  CHECK(nccl_detail::type_of(dtype::bf16) == ncclBfloat16);
  CHECK(nccl_detail::type_of(dtype::i32) == ncclInt32);
  CHECK(nccl_detail::type_of(dtype::i64) == ncclInt64);
  CHECK_THROWS_AS((void)nccl_detail::type_of(static_cast<dtype>(42)), error);
}

namespace {
std::string field_of(auto&& f) {
  try {
    f();
  } catch (const error& e) {
    return e.field();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("an empty backend and bad arguments throw errors naming the field") {
  nccl_backend empty;
  CHECK_FALSE(empty.valid());
  CHECK(empty.size() == 0);
  float x = 0.0f;
  CHECK(field_of([&] { empty.all_reduce(&x, 1, dtype::f32); }) == "backend");
  CHECK(field_of([&] { empty.barrier(); }) == "backend");
  CHECK(field_of([&] { (void)empty.split(0, 0); }) == "backend");
  CHECK(field_of([&] { empty.set_timeout(0.0); }) == "timeout");
  CHECK(field_of([&] { empty.set_buckets_in_flight(0); }) == "buckets_in_flight");
  CHECK(field_of([&] { empty.set_buckets_in_flight(17); }) == "buckets_in_flight");
  CHECK(empty.buckets_in_flight() == 4);  // the default
  empty.set_issue_stream(nullptr, true);  // an empty backend ignores it
  CHECK(empty.stream() == nullptr);
  ncclUniqueId id{};
  CHECK(field_of([&] { (void)nccl_backend::init(id, 0, 0); }) == "nranks");
  CHECK(field_of([&] { (void)nccl_backend::init(id, 2, 2); }) == "rank");
  CHECK(field_of([&] { (void)nccl_backend::init(id, 2, -1); }) == "rank");
}

TEST_CASE("without a device, init throws error(\"device\") naming the problem") {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    MESSAGE("a CUDA device is present: the no-device path is not exercised here");
    return;
  }
  ncclUniqueId id{};
  try {
    (void)nccl_backend::init(id, 1, 0);
    FAIL("init succeeded without a device");
  } catch (const error& e) {
    CHECK(e.field() == "device");
    CHECK(std::string(e.what()).find("no CUDA device") != std::string::npos);
  }
}

TEST_CASE("tuner pins: what NCCL runs for each flat topology; the pin reaches autosync's plugin through NCCL_TUNER_PLUGIN") {
  using nccl::algorithm_pin;
  CHECK(nccl::pin_of(topology_kind::ring) == algorithm_pin{nccl::nccl_algo_ring, nccl::nccl_algo_ring});
  CHECK(nccl::pin_of(topology_kind::tree) == algorithm_pin{nccl::nccl_algo_tree, -1});               // no tree reduce-scatter in NCCL
  CHECK(nccl::pin_of(topology_kind::halving_doubling) == algorithm_pin{-1, nccl::nccl_algo_pat});    // no halving-doubling all-reduce
  CHECK_FALSE(nccl::pin_of(topology_kind::hierarchical).any());
  // the library NCCL would load (a path here, as NCCL_TUNER_PLUGIN may name it)
  setenv("NCCL_TUNER_PLUGIN", AUTOSYNC_TUNER_PLUGIN, 1);
  const auto pin_next = nccl::tuner_pin_entry();
  REQUIRE(static_cast<bool>(pin_next));
  void* lib = dlopen(AUTOSYNC_TUNER_PLUGIN, RTLD_NOW | RTLD_NOLOAD);  // the instance tuner_pin_entry opened
  REQUIRE(lib != nullptr);
  const auto* v5 = static_cast<const plugin::tuner_v5*>(dlsym(lib, "ncclTunerPlugin_v5"));
  const auto pinned = reinterpret_cast<int (*)(std::uint64_t, int*, int*)>(dlsym(lib, "autosync_tuner_pinned"));
  REQUIRE(v5 != nullptr);
  REQUIRE(static_cast<bool>(pinned));
  // a pin, then the init NCCL runs for the new communicator: it files the pin under its commId
  CHECK(pin_next(nccl::nccl_algo_tree, nccl::nccl_algo_pat) == 0);
  void* ctx = nullptr;
  REQUIRE(v5->init(&ctx, 0xc0ffee, 8, 1, nullptr, nullptr, nullptr) == 0);
  int ar = -9, rsag = -9;
  CHECK(pinned(0xc0ffee, &ar, &rsag) == 1);
  CHECK(ar == nccl::nccl_algo_tree);
  CHECK(rsag == nccl::nccl_algo_pat);
  CHECK(v5->finalize(ctx) == 0);
  CHECK(pinned(0xc0ffee, &ar, &rsag) == 0);
  CHECK(pin_next(9, 0) == 1);  // no NCCL algorithm
  dlclose(lib);
}
