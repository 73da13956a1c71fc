// autosync/autosync.hpp — the light umbrella: vocabulary, policies, descriptors, cost model.
// Heavier parts are included on demand: <autosync/zoo/...>, <autosync/io/json.hpp>,
// <autosync/search/...>, <autosync/strategy/dispatch.hpp> (Boost.Hana), <autosync/graph.hpp>
// (Boost.Graph).
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/pack.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/items.hpp>
