// autosync/session_impl.hpp — the definitions of autosync::session (autosync/session.hpp).
//
// Include it in one translation unit of a program that uses the session (a one-file trainer
// includes it instead of session.hpp). When other translation units use the session too, add
// to this one, once per backend:
//
//   template class autosync::session<autosync::exec::mpi_backend>;
//
// It brings the executor, the plan compiler, the collectives and the JSON strategy reader into
// that translation unit; the others include session.hpp alone. See session.hpp for what the
// session does.
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/collectives.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/io/json/strategy.hpp>
#include <autosync/session.hpp>
#include <autosync/strategy/made_for.hpp>
#include <autosync/zoo/clusters.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace autosync {
namespace detail::session {

// The same error, its message prefixed with the rank (the trainer's mistakes name where they were made).
[[nodiscard]] inline error on_rank(const error& e, int rank) { return error(e.field(), "rank " + std::to_string(rank) + ": " + e.message()); }

// `text` of rank `root`, on every rank of `w` (a length, then the bytes as 64-bit words: the
// backends move typed elements).
template <exec::Backend B>
[[nodiscard]] std::string broadcast_text(B& w, std::string text, int root) {
  std::int64_t n = w.rank() == root ? static_cast<std::int64_t>(text.size()) : 0;
  w.broadcast(&n, 1, dtype::i64, root);
  if (n < 0) throw error("rank " + std::to_string(root), "session: a negative text length arrived");
  std::vector<std::int64_t> words((static_cast<std::size_t>(n) + 7) / 8, 0);
  if (w.rank() == root) std::memcpy(words.data(), text.data(), text.size());
  if (!words.empty()) w.broadcast(words.data(), words.size(), dtype::i64, root);
  std::string out(static_cast<std::size_t>(n), '\0');
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

// Tensor names looked up without building a std::string.
struct name_hash {
  using is_transparent = void;
  [[nodiscard]] std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// Every rank's failure flag; the lowest failing rank (-1: none). Collective over `w`.
template <exec::Backend B>
[[nodiscard]] int first_failure(B& w, bool failed) {
  const int p = w.size();
  std::vector<std::int32_t> all(static_cast<std::size_t>(p), 0);
  const std::int32_t mine = failed ? 1 : 0;
  w.all_gather(&mine, all.data(), 1, dtype::i32);
  for (int r = 0; r < p; ++r)
    if (all[static_cast<std::size_t>(r)] != 0) return r;
  return -1;
}

}  // namespace detail::session

template <exec::Backend B>
struct session<B>::impl {
  model_spec model;
  cluster_spec cluster;
  strategy_desc strategy;
  session_options opt;
  int rank = 0, p = 1, rpn = 1;
  std::unordered_map<std::string, std::size_t, detail::session::name_hash, std::equal_to<>> index;  // tensor name -> model index
  exec::comms<B> comms;
  std::optional<exec::executor<B>> ex;
  std::size_t nbuckets = 0;
  std::vector<std::uint8_t> marked;                     // per tensor: ready() this iteration
  std::vector<std::vector<std::uint32_t>> bucket_tensors;
  std::vector<std::uint32_t> bucket_group;
  std::vector<std::uint32_t> pieces, left;              // per tensor: buckets holding a piece / not yet done this iteration
  std::vector<std::uint32_t> completed;                 // the callback's scratch
  std::function<void(const bucket_info&)> on_done;
  bool active = false;

  void bucket_done(std::uint32_t b) {
    completed.clear();
    for (auto t : bucket_tensors[b])
      if (--left[t] == 0) completed.push_back(t);
    if (on_done) on_done(bucket_info{b, bucket_group[b], bucket_tensors[b], completed});
  }
};

template <exec::Backend B>
session<B>::session(B& world, model_spec model, strategy_source source, session_options o) : p_(std::make_unique<impl>()) {
  impl& d = *p_;
  if (!world.valid()) throw error("world", "session: the world communicator is empty");
  d.rank = world.rank();
  d.p = world.size();
  d.opt = std::move(o);
  d.model = std::move(model);

  // 1. this rank's inputs: the cluster and the layout
  std::string failure, field;
  auto fail = [&](const std::exception& e) {
    if (failure.empty()) {
      const auto* ae = dynamic_cast<const error*>(&e);
      field = ae ? ae->field() : "";
      failure = ae ? ae->message() : e.what();
    }
  };
  try {
    d.model.validate();
    d.cluster = d.opt.cluster ? *d.opt.cluster : source.cluster() ? *source.cluster() : zoo::local(d.p);
    d.rpn = d.opt.ranks_per_node > 0 ? d.opt.ranks_per_node : (d.cluster.world_size() == d.p ? d.cluster.max_devices_per_node() : d.p);
    if (d.rpn < 1 || d.p % d.rpn != 0)
      throw error("ranks_per_node", std::to_string(d.rpn) + " ranks per node do not divide the " + std::to_string(d.p) + " ranks of the world" +
                                        (d.opt.ranks_per_node > 0 ? "" : " (from cluster '" + d.cluster.name + "'; set session_options::ranks_per_node)"));
  } catch (const std::exception& e) {
    fail(e);
  }

  // 2. rank 0 loads, takes or searches the strategy; the JSON text (or rank 0's error) reaches every rank
  std::string text;
  if (d.rank == 0) {
    if (failure.empty()) {
      try {
        strategy_desc s;
        if (source.strategy()) s = *source.strategy();
        else if (source.file()) s = io::load_strategy_file(*source.file());
        else if (source.make()) s = source.make()(d.model, d.p, d.rpn);
        else throw error("source", "session: the strategy source is empty");
        text = "1" + io::to_json_text(s);
      } catch (const std::exception& e) {
        fail(e);
      }
    }
    if (!failure.empty()) text = "0" + field + "\n" + failure;
  }
  text = detail::session::broadcast_text(world, std::move(text), 0);
  if (text.empty() || text[0] != '1') {
    const auto nl = text.find('\n');
    const std::string f = nl == std::string::npos ? "" : text.substr(1, nl - 1);
    const std::string m = nl == std::string::npos ? "session: rank 0 sent no strategy" : text.substr(nl + 1);
    throw error(f, m + (d.rank == 0 ? "" : " (on rank 0, which gets the strategy)"));
  }

  // 3. every rank checks it and compiles the plan; the ranks agree on whether all succeeded
  exec::plan pl;
  if (failure.empty()) {
    try {
      d.strategy = io::parse_strategy(std::string_view(text).substr(1), "<strategy from rank 0>");
      try {
        d.strategy.validate(d.model, d.cluster);
      } catch (const error& e) {
        throw error(e.field(), "strategy '" + d.strategy.name + "' does not fit model '" + d.model.name + "' on cluster '" + d.cluster.name +
                                   "': " + e.message());
      }
      if (d.strategy.made_for) check_made_for(*d.strategy.made_for, d.strategy.name, d.cluster, d.p, d.rpn);
      pl = exec::compile_plan(d.model, d.cluster, d.strategy, exec::layout{d.p, d.rpn});
    } catch (const std::exception& e) {
      fail(e);
    }
  }
  const int bad = detail::session::first_failure(world, !failure.empty());
  if (!failure.empty()) throw error(field, failure);
  if (bad >= 0)
    throw error("rank " + std::to_string(bad), "session: rank " + std::to_string(bad) + " could not set up (its own error says why); every rank stops");

  // 4. the session's communicators, the executor and its handshake
  for (std::size_t t = 0; t < d.model.tensors.size(); ++t) d.index.emplace(d.model.tensors[t].name, t);
  d.nbuckets = pl.buckets.size();
  d.marked.assign(d.model.tensors.size(), 0);
  d.pieces.assign(d.model.tensors.size(), 0);
  d.bucket_tensors.resize(d.nbuckets);
  d.bucket_group.resize(d.nbuckets);
  for (std::size_t b = 0; b < d.nbuckets; ++b) {
    auto& ts = d.bucket_tensors[b];
    for (const auto& sg : pl.buckets[b].segments) ts.push_back(sg.tensor);
    std::sort(ts.begin(), ts.end());
    ts.erase(std::unique(ts.begin(), ts.end()), ts.end());
    for (auto t : ts) ++d.pieces[t];
    d.bucket_group[b] = pl.buckets[b].group;
  }
  d.left = d.pieces;
  d.comms = exec::comms<B>::make(world.split(0, d.rank), d.rpn);
  exec::executor_options eo;
  eo.average = d.opt.reduce == reduction::average;
  eo.error_feedback = d.opt.error_feedback;
  eo.pack = d.opt.pack;
  eo.direct_run_bytes = exec::direct_run_bytes_for(d.cluster, d.p, d.rpn);
  eo.timeout = d.opt.timeout;
  d.ex.emplace(d.comms, d.model, std::move(pl), eo);
  d.ex->on_bucket_done([&d](std::uint32_t b) { d.bucket_done(b); });
  d.ex->setup();
}

template <exec::Backend B>
session<B>::~session() = default;

template <exec::Backend B>
void session<B>::begin(std::span<const exec::gradient> grads) {
  impl& d = *p_;
  try {
    d.ex->begin_iteration(grads);
  } catch (const error& e) {
    throw detail::session::on_rank(e, d.rank);
  }
  std::fill(d.marked.begin(), d.marked.end(), std::uint8_t{0});
  d.active = true;
}

template <exec::Backend B>
void session<B>::ready(std::size_t t) {
  impl& d = *p_;
  try {
    d.ex->ready(t);
  } catch (const error& e) {
    throw detail::session::on_rank(e, d.rank);
  }
  d.marked[t] = 1;
}

template <exec::Backend B>
void session<B>::ready(std::string_view name) {
  impl& d = *p_;
  const auto it = d.index.find(name);
  if (it == d.index.end())
    throw error("tensor", "rank " + std::to_string(d.rank) + ": ready(\"" + std::string(name) + "\"): model '" + d.model.name +
                              "' has no tensor named '" + std::string(name) + "'");
  ready(it->second);
}

template <exec::Backend B>
exec::iteration_timing session<B>::finish() {
  impl& d = *p_;
  std::vector<std::size_t> missing;
  if (d.active)
    for (std::size_t t = 0; t < d.marked.size(); ++t)
      if (!d.marked[t]) missing.push_back(t);
  try {
    auto t = d.ex->finish();
    d.active = false;
    std::copy(d.pieces.begin(), d.pieces.end(), d.left.begin());
    return t;
  } catch (const error& e) {
    d.active = false;
    std::copy(d.pieces.begin(), d.pieces.end(), d.left.begin());
    if (missing.empty()) {
      if (e.field() == "finish" || e.field() == "setup") throw detail::session::on_rank(e, d.rank);
      throw;
    }
    std::string names;
    for (std::size_t k = 0; k < missing.size() && k < 8; ++k) names += (k ? ", '" : "'") + d.model.tensors[missing[k]].name + "'";
    if (missing.size() > 8) names += " and " + std::to_string(missing.size() - 8) + " more";
    throw error("ready", "rank " + std::to_string(d.rank) + ": finish() before ready() of " + std::to_string(missing.size()) + " tensor" +
                             (missing.size() == 1 ? "" : "s") + ": " + names + "; the iteration was abandoned");
  }
}

template <exec::Backend B>
void session<B>::on_bucket_done(std::function<void(const bucket_info&)> f) {
  impl& d = *p_;
  if (d.active) throw error("on_bucket_done", "rank " + std::to_string(d.rank) + ": set the bucket callback between iterations");
  d.on_done = std::move(f);
}

template <exec::Backend B>
const strategy_desc& session<B>::strategy() const noexcept { return p_->strategy; }
template <exec::Backend B>
const model_spec& session<B>::model() const noexcept { return p_->model; }
template <exec::Backend B>
const cluster_spec& session<B>::cluster() const noexcept { return p_->cluster; }
template <exec::Backend B>
int session<B>::rank() const noexcept { return p_->rank; }
template <exec::Backend B>
int session<B>::world_size() const noexcept { return p_->p; }
template <exec::Backend B>
int session<B>::ranks_per_node() const noexcept { return p_->rpn; }
template <exec::Backend B>
std::size_t session<B>::buckets() const noexcept { return p_->nbuckets; }
template <exec::Backend B>
reduction session<B>::reduce() const noexcept { return p_->opt.reduce; }
template <exec::Backend B>
exec::packing session<B>::packing() const noexcept { return p_->opt.pack; }
template <exec::Backend B>
B& session<B>::communicator() noexcept { return p_->comms.world; }

template <exec::Backend B>
std::vector<exec::exchange_note> session<B>::exchange_notes() const {
  return p_->ex ? p_->ex->exchange_notes() : std::vector<exec::exchange_note>{};
}
template <exec::Backend B>
std::string session<B>::save_state() const {
  if (!p_->ex) throw error("state", "rank " + std::to_string(p_->rank) + ": the session has no executor");
  return p_->ex->save_state();
}
template <exec::Backend B>
void session<B>::load_state(std::string_view bytes) {
  if (!p_->ex) throw error("state", "rank " + std::to_string(p_->rank) + ": the session has no executor");
  p_->ex->load_state(bytes);
}
template <exec::Backend B>
std::size_t session<B>::tensor_index(std::string_view name) const {
  const auto it = p_->index.find(name);
  if (it == p_->index.end())
    throw error("tensor", "rank " + std::to_string(p_->rank) + ": model '" + p_->model.name + "' has no tensor named '" + std::string(name) + "'");
  return it->second;
}

}  // namespace autosync
