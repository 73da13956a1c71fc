// tests/mpi/same_bits.hpp — whether every rank holds the same bits as rank 0 (collective: every
// rank calls it with its own copy, of the same length everywhere).
#pragma once

#include <autosync/model.hpp>

#include <cstring>
#include <span>
#include <vector>

namespace autosync::mpitest {

template <class B>
[[nodiscard]] bool same_on_every_rank(B& w, std::span<const float> x) {
  std::vector<float> r0(x.begin(), x.end());
  if (!r0.empty()) w.broadcast(r0.data(), r0.size(), dtype::f32, 0);
  int differ = !x.empty() && std::memcmp(r0.data(), x.data(), x.size() * sizeof(float)) != 0;
  w.all_reduce(&differ, 1, dtype::i32);
  return differ == 0;
}
// The same for several arrays (one verdict for all of them).
template <class B>
[[nodiscard]] bool same_on_every_rank(B& w, const std::vector<std::vector<float>>& parts) {
  bool same = true;
  for (const auto& v : parts) same = same_on_every_rank(w, std::span<const float>(v)) && same;
  return same;
}

}  // namespace autosync::mpitest
