// autosync/io/compression_report.hpp — per group of a strategy: its compressor, how its bytes
// travel, the bits per element it puts on the wire and the time the cost model predicts for it
// (what `autosync optimize` prints under the strategy when a group compresses).
//
//   bits per element   8 x wire bytes / elements over the group's items: the all-reduce
//                      equivalent bytes the cost model charges (registry::allreduce_equivalent:
//                      an all-gather's payload counts p / 2 times), so 32 is an uncompressed
//                      fp32 all-reduce and an all-gather compressor's bits grow with the ranks
//   predicted busy     the timeline's collective, parameter-server and encode/decode time of
//                      the group's buckets in one iteration (cost::estimate with the timeline)
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/io/report.hpp>
#include <autosync/model.hpp>
#include <autosync/registry/extensions.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/items.hpp>

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace autosync::io {

struct group_compression {
  std::uint32_t group = 0;
  std::string compressor;         // its name ("none", "fp16", "topk", ...)
  std::string exchange;           // "all-reduce", "all-gather", "scatter-gather", "two all-reduces"
  std::int64_t elements = 0;      // gradient elements of the group's items
  double bits_per_element = 0.0;  // all-reduce equivalent wire bits per element
  double busy = 0.0;              // predicted seconds of communication and codec work per iteration
};

[[nodiscard]] inline std::vector<group_compression> compression_by_group(const model_spec& m, const cluster_spec& c, const strategy_desc& s) {
  std::vector<group_compression> r(s.groups.size());
  std::vector<double> wire(s.groups.size(), 0.0);
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    r[g].group = static_cast<std::uint32_t>(g);
    r[g].compressor = compression_name(s.groups[g].compression);
    const auto* e = is_extension_id(s.groups[g].compression.id) ? registry::find_compression(s.groups[g].compression.id) : nullptr;
    r[g].exchange = std::string(registry::name_of(e ? e->exchange : registry::exchange_kind::all_reduce));
  }
  // the buckets' wire bytes: a fused bucket is priced as a whole where its codecs run on it packed
  const auto e = cost::evaluate(m, c, s, cost::options{.timeline = true}, true);
  for (const auto& it : e.ws.items) r[it.group].elements += it.elements;
  for (const auto& b : e.buckets) wire[b.group] += static_cast<double>(b.wire_bytes);
  for (std::size_t g = 0; g < r.size(); ++g)
    r[g].bits_per_element = r[g].elements > 0 ? 8.0 * wire[g] / static_cast<double>(r[g].elements) : 0.0;
  for (const auto& ev : e.p.events)
    if (ev.group < r.size()) r[ev.group].busy += ev.end - ev.start;
  return r;
}

// The table, one line per group.
inline void print_compression(std::ostream& os, const std::vector<group_compression>& rows) {
  os << "compression per group (bits per element: all-reduce equivalent wire bits; busy: predicted per iteration)\n";
  for (const auto& g : rows) {
    char line[200];
    std::snprintf(line, sizeof line, "  group %-3u %-10s %-16s %12lld elements  %7.3f bits/element  busy %s\n", g.group, g.compressor.c_str(),
                  g.exchange.c_str(), static_cast<long long>(g.elements), g.bits_per_element, format_ms(g.busy).c_str());
    os << line;
  }
}

}  // namespace autosync::io
