// autosync/autosync.hpp — the light umbrella: the vocabulary (model, cluster, policies,
// descriptors, items), the cost model and the baseline strategies. Heavier parts are included
// on demand:
//   <autosync/zoo/models.hpp>, <autosync/zoo/clusters.hpp>   built-in models and cluster presets
//   <autosync/search/optimizer.hpp>                           the search
//   <autosync/io/json.hpp>, <autosync/io/svg.hpp>             files and pictures (nlohmann-json)
//   <autosync/strategy/dispatch.hpp>                          descriptor -> types (Boost.Hana)
//   <autosync/strategy/emit.hpp>                              strategy -> C++ header
//   <autosync/graph.hpp>, <autosync/io/fabric_report.hpp>    the cluster as a graph (Boost.Graph): cuts,
//                                                             ring order; the cost model held against them
//   <autosync/exec/...>                                       plans and executors (MPI: exec/mpi/)
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/pack.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/items.hpp>
