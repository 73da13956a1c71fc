// autosync/search/report.hpp — why a strategy costs what it costs: the bottleneck resource, the
// lower bound, and what each group's choice saves over the next alternative.
//
// bottleneck(model, cluster, strategy)
//   Every resource's busy time after the forward pass, from the estimate's public result and
//   the fabric's bandwidth terms (cost/fabric.hpp):
//     compute        the backward pass (gradients cannot be ready earlier)
//     NIC            the busiest worker node's NICs: every lane-0 collective's node-level cut
//                    (cost::nic_occupancy, sparse_all_gather_nic_occupancy) plus the
//                    parameter-server transfers through node k (cost::ps_nic_unit x bytes)
//     device links   every rank's own link for the lane-0 collectives (cost::link_occupancy:
//                    2(p-1)/p n intra.beta; on NCCL clusters the lower bound's (p-1)/p n over
//                    the link's NCCL rate), several ranks per node
//   NIC and device-link times are the terms of the estimate's lower bound (cost::lower_bound),
//   so on NCCL clusters both use the transport's rate, not the NICs' line rate.
//     server s       the busy time of parameter server s on the timeline
//   The bottleneck is the busiest of them: "NIC-bound: 643.5 of 712.2 ms" says the NICs are
//   busy 643.5 ms of the 712.2 ms iteration. The collective lane's own busy time (bandwidth
//   plus latencies) and the estimate's lower bound (forward + max(backward, bandwidth bound)
//   <= iteration: cost/estimate.hpp, 7) are reported beside it.
//
// alternatives(model, cluster, strategy, rules)
//   Per group, every value of every aspect the search could give it instead (search/space.hpp
//   variants, filtered by the knowledge rules and the strategy's own validation), the rest of
//   the strategy unchanged; the fastest of them is the group's next alternative, and
//   `saving` = its predicted iteration - the strategy's: what the group's choice buys
//   (>= 0 when the strategy is a local optimum; 0: an equal alternative exists). Iterations are
//   as the executor runs them (`executor`, the default: max(estimate, serial replay) for a
//   strategy with parameter servers, search/serial.hpp), the measure optimize picks by; with
//   `executor` false, the estimate's (parameter-server lanes side by side).
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/collectives.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/search/constraints.hpp>
#include <autosync/search/serial.hpp>
#include <autosync/search/space.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/items.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace autosync::search {

struct resource_time {
  std::string resource;  // "compute", "NIC", "device links", "server 0", ...
  double busy = 0.0;     // seconds, after the forward pass
};

struct bottleneck_report {
  double iteration = 0.0, forward = 0.0, backward = 0.0, exposed = 0.0;
  double lower_bound = 0.0;        // the estimate's own (cost::prediction::lower_bound)
  double collective_lane = 0.0;    // busy time of lane 0 (bandwidth and latencies)
  std::vector<resource_time> resources;  // busiest first; resources[0] is the bottleneck
  [[nodiscard]] const resource_time& bottleneck() const { return resources.front(); }
};

[[nodiscard]] inline bottleneck_report bottleneck(const model_spec& m, const cluster_spec& c, const strategy_desc& s) {
  s.validate(m, c);
  const auto p = cost::estimate(m, c, s, cost::options{.timeline = true});
  const auto f = cost::make_fabric(c);
  const auto items = expand(m, c, s);
  bottleneck_report r;
  r.iteration = p.iteration;
  r.forward = p.forward;
  r.backward = p.backward;
  r.exposed = p.exposed;
  r.lower_bound = p.lower_bound;

  double lane0_nic = 0.0, links = 0.0;
  std::vector<double> ps_nic(f.workers.size(), 0.0);
  for (const auto& it : items) {
    const auto& g = s.groups[it.group];
    const auto n = static_cast<double>(it.wire_bytes);
    switch (g.architecture) {
      case architecture_kind::all_gather:
        if (!f.nccl) {  // the device backend all-reduces a sparse bucket, as all_reduce below
          lane0_nic += cost::sparse_all_gather_nic_occupancy(f, n);
          if (f.g > 1) links += cost::sparse_all_gather_lower_bound(f, n);
          break;
        }
        [[fallthrough]];
      case architecture_kind::all_reduce:
      case architecture_kind::sharded:
        lane0_nic += cost::nic_occupancy(f, n);
        links += cost::link_occupancy(f, n);
        break;
      case architecture_kind::parameter_server:
        if (it.server < 0 || f.nodes <= 1) break;
        for (std::size_t k = 0; k < ps_nic.size(); ++k)
          ps_nic[k] += cost::ps_nic_unit(f, static_cast<std::size_t>(it.server), g.replication == replication_kind::local, k) * n;
        break;
    }
  }
  double ps_top = 0.0;
  for (double v : ps_nic) ps_top = std::max(ps_top, v);
  std::vector<double> lanes(1 + f.servers.size(), 0.0);
  for (const auto& e : p.events)
    if (e.lane >= 0 && static_cast<std::size_t>(e.lane) < lanes.size()) lanes[static_cast<std::size_t>(e.lane)] += e.end - e.start;
  r.collective_lane = lanes[0];

  r.resources.push_back({"compute", p.backward});
  if (f.nodes > 1) r.resources.push_back({"NIC", lane0_nic + ps_top});
  if (f.g > 1) r.resources.push_back({"device links", links});
  for (std::size_t sv = 0; sv < f.servers.size(); ++sv)
    if (lanes[1 + sv] > 0.0) r.resources.push_back({"server " + std::to_string(sv), lanes[1 + sv]});
  std::stable_sort(r.resources.begin(), r.resources.end(), [](const resource_time& a, const resource_time& b) { return a.busy > b.busy; });
  return r;
}

// "NIC-bound: 643.5 of 712.2 ms"
[[nodiscard]] inline std::string summary(const bottleneck_report& r) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s-bound: %.1f of %.1f ms", r.bottleneck().resource.c_str(), r.bottleneck().busy * 1e3, r.iteration * 1e3);
  return buf;
}

struct group_alternative {
  std::size_t group = 0;
  bool found = false;          // false: no other value of any aspect is allowed for the group
  aspect changed = aspect_of<slot::architecture>;
  group_desc alternative;      // the group's fastest one-aspect change
  double iteration = 0.0;      // the strategy's predicted iteration with it
  double saving = 0.0;         // iteration - the strategy's own prediction
};

[[nodiscard]] inline std::vector<group_alternative> alternatives(const model_spec& m, const cluster_spec& c, const strategy_desc& s,
                                                                 const knowledge& rules = {}, bool executor = true) {
  s.validate(m, c);
  const space sp(m, c, space_options{rules.allow_lossy, rules.tiny_bytes, space_options{}.large_bytes, rules.lossy});
  const context cx{m, c, rules};
  cost::evaluator ev(m, c);
  // the iteration of x whose estimate is `estimate`: as the executor runs it, which differs only
  // with parameter servers (and is never below the estimate)
  auto as_run = [&](const strategy_desc& x, double estimate) {
    if (!executor || !has_parameter_servers(x)) return estimate;
    const auto r = serial_replay(m, c, x);
    return std::max(r.iteration, r.estimate);
  };
  const double base = as_run(s, ev(s).iteration);
  // the single tensor of each group (nullptr when it has several or a split one)
  std::vector<const tensor*> only(s.groups.size(), nullptr);
  std::vector<std::size_t> members(s.groups.size(), 0);
  for (std::size_t i = 0; i < s.assignments.size(); ++i) {
    const auto& as = s.assignments[i];
    if (as.split()) {
      for (auto g : as.shard_groups) members[static_cast<std::size_t>(g)] += 2;
      continue;
    }
    auto& k = members[static_cast<std::size_t>(as.group)];
    if (++k == 1) only[static_cast<std::size_t>(as.group)] = &m.tensors[i];
  }
  std::vector<group_alternative> out;
  strategy_desc x = s;
  std::vector<group_desc> vs;
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    group_alternative best;
    best.group = gi;
    best.iteration = std::numeric_limits<double>::infinity();
    const tensor* t = members[gi] == 1 ? only[gi] : nullptr;
    for (auto a : sp.aspects()) {
      vs.clear();
      sp.variants(s.groups[gi], a, t, vs);
      for (const auto& v : vs) {
        if (v == s.groups[gi]) continue;
        x.groups[gi] = v;
        try {
          x.validate(m, c);
        } catch (const error&) {
          continue;
        }
        if (!satisfies(cx, x)) continue;
        const double estimate = ev(x).iteration;
        if (!(estimate < best.iteration)) continue;  // as run it is no faster than its estimate
        const double it = as_run(x, estimate);
        if (it < best.iteration) {
          best.found = true;
          best.changed = a;
          best.alternative = v;
          best.iteration = it;
        }
      }
    }
    x.groups[gi] = s.groups[gi];
    if (best.found) best.saving = best.iteration - base;
    else best.iteration = base;
    out.push_back(best);
  }
  return out;
}

// The slot an aspect changes ("architecture", or a registered extension slot's name).
[[nodiscard]] inline std::string name_of(aspect a) { return aspect_name(a); }

}  // namespace autosync::search
