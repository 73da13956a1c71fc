// autosync/exec/collectives/sparse_all_gather.hpp — sparse gradients: all-gather of touched rows, summed.
//
//   sparse_all_gather (Horovod's sparse path, allgatherv of indices and rows): the touched row
//   indices and their rows are ring-all-gathered (blocks of varying size), then every rank sums
//   the rows of every rank, in rank order, into a zeroed buffer.
//
// Part of exec/collectives.hpp (the overview: block layout, segmented buffers, exactness).
#pragma once

#include <autosync/exec/collectives/common.hpp>
#include <autosync/exec/collectives/ring.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace autosync::exec {

// Sparse all-gather: buf is a row-major [total_rows x row_elems] table; this rank touched `rows`
// (sorted, unique, < total_rows). After, every rank's buf holds, for each row, the sum of that
// row over the ranks that touched it (zero where nobody did). Invalid `rows` on any rank throws
// on every rank (the ranks agree on the row counts first, so nobody hangs).
template <Backend B>
void sparse_all_gather(comms<B>& c, void* buf, std::size_t total_rows, std::size_t row_elems, dtype t,
                       std::span<const std::int64_t> rows) {
  detail::check_args(c, buf, total_rows * row_elems, t, "sparse_all_gather");
  const int p = c.world.size(), r = c.world.rank();
  std::int64_t bad = -1;
  for (std::size_t i = 0; i < rows.size() && bad < 0; ++i)
    if (rows[i] < 0 || static_cast<std::uint64_t>(rows[i]) >= total_rows || (i > 0 && rows[i] <= rows[i - 1]))
      bad = static_cast<std::int64_t>(i);
  std::array<std::int64_t, 2> mine{bad < 0 ? static_cast<std::int64_t>(rows.size()) : -1, bad};
  std::vector<std::int64_t> meta(2 * static_cast<std::size_t>(p));
  c.world.all_gather(mine.data(), meta.data(), 2, dtype::i64);
  for (int q = 0; q < p; ++q) {
    const std::int64_t i = meta[2 * static_cast<std::size_t>(q) + 1];
    if (meta[2 * static_cast<std::size_t>(q)] >= 0) continue;
    const std::string field = "rows[" + std::to_string(i) + "]";
    if (q == r)
      throw error(field, "sparse_all_gather: row " + std::to_string(rows[static_cast<std::size_t>(i)]) +
                             (rows[static_cast<std::size_t>(i)] < 0 || static_cast<std::uint64_t>(rows[static_cast<std::size_t>(i)]) >= total_rows
                                  ? " is outside [0, " + std::to_string(total_rows) + ")"
                                  : " is not above the row before it (rows must be sorted and unique)"));
    throw error(field, "sparse_all_gather: rank " + std::to_string(q) + " passed invalid rows");
  }
  const detail::view v(buf, t);
  std::vector<std::size_t> counts, vcounts;
  for (int q = 0; q < p; ++q) {
    counts.push_back(static_cast<std::size_t>(meta[2 * static_cast<std::size_t>(q)]));
    vcounts.push_back(counts.back() * row_elems);
  }
  const auto li = detail::block_layout::of_sizes(counts), lv = detail::block_layout::of_sizes(vcounts);
  std::vector<std::int64_t> idx(li.total());
  std::copy(rows.begin(), rows.end(), idx.begin() + static_cast<std::ptrdiff_t>(li.begin(r)));
  auto vals = detail::scratch(lv.total(), v.es);
  for (std::size_t i = 0; i < rows.size(); ++i)
    detail::copy_bytes(vals.data() + (lv.begin(r) + i * row_elems) * v.es, v.at(static_cast<std::size_t>(rows[i]) * row_elems), row_elems * v.es);
  detail::ring_all_gather(c.world, detail::view(idx.data(), dtype::i64), li);
  detail::ring_all_gather(c.world, detail::view(vals.data(), t), lv);
  if (total_rows * row_elems > 0) std::memset(buf, 0, total_rows * row_elems * v.es);
  for (std::size_t j = 0; j < idx.size(); ++j)
    sum_into(v.at(static_cast<std::size_t>(idx[j]) * row_elems), vals.data() + j * row_elems * v.es, row_elems, t);
}

}  // namespace autosync::exec
