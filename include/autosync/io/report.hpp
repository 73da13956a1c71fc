// autosync/io/report.hpp — a strategy and its prediction as text tables for people.
//
//   human_bytes(26214400)      "25.00 MiB"
//   format_ms(0.0123)          "12.30 ms"
//   describe_group(g)          "all_reduce hierarchical<ring,tree> fuse:25.00 MiB/first 1.00 MiB"
//   print_groups(os, m, c, s)  the group table: members, gradient and wire bytes, aspects;
//                              groups with the same aspects share a row unless `all`
//   describe_prediction(p)     "predicted iteration 12.30 ms: forward .., backward .., ..."
//
// `autosync optimize` and `autosync explain` print these; io/search_report.hpp adds the search's
// result (found strategy and baselines).
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/items.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace autosync::io {

// Bytes with a binary unit: "512 B", "1.5 KiB", "25.00 MiB", "1.20 GiB".
[[nodiscard]] inline std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

// Seconds as milliseconds with two decimals: "12.30 ms".
[[nodiscard]] inline std::string format_ms(double s) {
  char buf[48];
  if (std::abs(s) < 1e3 || !std::isfinite(s)) std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.4g s", s);  // 1000 s and more: seconds, never a row of digits
  return buf;
}

// One group's aspects in one line; aspects at their defaults (and those the architecture does
// not read) are left out.
[[nodiscard]] inline std::string describe_group(const group_desc& g) {
  std::string r(name_of(g.architecture));
  if (g.architecture == architecture_kind::all_reduce || g.architecture == architecture_kind::sharded) {
    r += " ";
    r += name_of(g.topology.kind);
    if (g.topology.kind == topology_kind::hierarchical)
      r += "<" + std::string(name_of(g.topology.intra)) + "," + std::string(name_of(g.topology.inter)) + ">";
  }
  if (g.partitioner.kind == partitioner_kind::even)
    r += " even<" + std::to_string(g.partitioner.shards) + "," + std::to_string(g.partitioner.axis) + ">";
  if (g.partitioner.kind == partitioner_kind::by_bytes) r += " by_bytes<" + human_bytes(double(g.partitioner.max_bytes)) + ">";
  if (g.architecture == architecture_kind::parameter_server) {
    r += " ";
    r += name_of(g.placement.kind);
    if (g.placement.kind == placement_kind::pinned) r += "<" + std::to_string(g.placement.server) + ">";
    if (g.replication == replication_kind::local) r += " local-repl";
  }
  if (g.compression != 0) r += " " + compression_name(g.compression);
  if (g.fusion.cap_bytes == unbounded_bytes) r += " fuse:all";
  else if (g.fusion.cap_bytes > 0) {
    r += " fuse:" + human_bytes(double(g.fusion.cap_bytes));
    if (g.fusion.first_cap_bytes != g.fusion.cap_bytes) r += "/first " + human_bytes(double(g.fusion.first_cap_bytes));
  }
  if (g.schedule == schedule_kind::priority) r += " priority";
  return r;
}

// The group table of a strategy: members, bytes, aspects, largest first. Many groups with the
// same aspects (the search splits runs for their fusion boundaries) are shown as one row unless
// `all`; a note under the table says so.
inline void print_groups(std::ostream& os, const model_spec& m, const cluster_spec& c, const strategy_desc& s, bool all = false) {
  const auto items = expand(m, c, s);
  struct row {
    std::string aspects;
    std::vector<std::size_t> groups;
    std::size_t items = 0;
    std::int64_t bytes = 0, wire = 0;
  };
  std::vector<row> rows;
  std::vector<std::size_t> row_of(s.groups.size());
  std::map<std::string, std::size_t> by_aspects;
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    auto a = describe_group(s.groups[g]);
    if (all || !by_aspects.count(a)) {
      by_aspects[a] = rows.size();
      rows.push_back(row{a, {}, 0, 0, 0});
    }
    row_of[g] = by_aspects[a];
    rows[row_of[g]].groups.push_back(g);
  }
  for (const auto& it : items) {
    auto& r = rows[row_of[it.group]];
    r.bytes += it.bytes;
    r.wire += it.wire_bytes;
    ++r.items;
  }
  std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) { return a.bytes > b.bytes; });
  os << "  groups  items  gradient bytes  wire bytes   aspects\n";
  for (const auto& r : rows) {
    if (r.items == 0) continue;
    std::string gs = r.groups.size() == 1 ? "#" + std::to_string(r.groups[0]) : std::to_string(r.groups.size()) + "x";
    char line[256];
    std::snprintf(line, sizeof line, "  %6s  %5zu  %14s  %10s   ", gs.c_str(), r.items, human_bytes(double(r.bytes)).c_str(),
                  human_bytes(double(r.wire)).c_str());
    os << line << r.aspects << "\n";
  }
  if (!all && rows.size() < s.groups.size())
    os << "  (" << s.groups.size() << " groups; rows merge groups with the same aspects, \"Nx\" = N groups; "
       << "`autosync explain --all-groups` lists each)\n";
}

// "predicted iteration X ms: forward X ms, backward X ms, communication busy X ms, exposed X ms"
[[nodiscard]] inline std::string describe_prediction(const cost::prediction& p) {
  return "predicted iteration " + format_ms(p.iteration) + ": forward " + format_ms(p.forward) + ", backward " + format_ms(p.backward) +
         ", communication busy " + format_ms(p.communication) + ", exposed " + format_ms(p.exposed);
}

}  // namespace autosync::io
