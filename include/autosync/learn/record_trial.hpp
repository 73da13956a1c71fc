// autosync/learn/record_trial.hpp — the trial record of a session's run, for any trainer.
//
//   std::vector<learn::step_measure> mine;                 // this rank's measured iterations
//   for (...) { const auto t0 = clock::now(); s.begin(g); ...; const auto t = s.finish();
//               mine.push_back({t.sync, t.exposed, seconds(clock::now() - t0)}); }
//   auto rec = learn::record_trial(s, mine, {.settings = {warmup, 0.0, seed}});   // every rank
//   if (s.rank() == 0) learn::append_record("trials.jsonl", rec);                  // learn/records.hpp
//
// record_trial is collective over the session's communicator (call it between iterations, on
// every rank, with the same number of measured iterations): it all-gathers every rank's
// (sync, exposed, iteration) seconds and returns, on every rank, the record (learn/records.hpp)
// of the session's model, cluster, layout and strategy with those iterations (the maxima over
// the ranks and every rank's figures), what the compressors' exchanges decided (exchange_notes), the cost model's prediction for the same strategy, and the
// host's environment. `autosync run` writes its records with it; learn::train and `autosync
// learn` read them back.
#pragma once

#include <autosync/cost/estimate.hpp>
#include <autosync/error.hpp>
#include <autosync/learn/records.hpp>
#include <autosync/learn/run_record.hpp>
#include <autosync/session.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace autosync::learn {

// One measured iteration on one rank: the executor's sync and exposed seconds (exec::iteration_timing)
// and the whole iteration as the trainer timed it.
struct step_measure {
  double sync = 0.0, exposed = 0.0, iteration = 0.0;
};

struct trial_context {
  std::optional<model_source> model;  // how the record names the model (a zoo name and scale); default: the model inline
  run_settings settings{};            // warm-up iterations, simulated compute scale, seed (the packing is the session's)
  std::string comm_library;           // e.g. exec::mpi_library_version()
  std::string thread_level;           // e.g. exec::thread_level_name(mpi.thread_level())
  std::string autosync_version = "unknown";
};

template <exec::Backend B>
[[nodiscard]] trial_record record_trial(session<B>& s, std::span<const step_measure> mine, const trial_context& ctx = {}) {
  auto& w = s.communicator();
  const int p = s.world_size();
  const auto n = static_cast<std::int64_t>(mine.size());
  std::vector<std::int64_t> counts(static_cast<std::size_t>(p));
  w.all_gather(&n, counts.data(), 1, dtype::i64);
  for (int r = 0; r < p; ++r)
    if (counts[static_cast<std::size_t>(r)] != counts[0])
      throw error("rank " + std::to_string(r), "record_trial: rank " + std::to_string(r) + " measured " +
                                                   std::to_string(counts[static_cast<std::size_t>(r)]) + " iterations, rank 0 " +
                                                   std::to_string(counts[0]) + " (every rank must pass the same count)");
  std::vector<double> flat;
  flat.reserve(mine.size() * 3);
  for (const auto& m : mine) flat.insert(flat.end(), {m.sync, m.exposed, m.iteration});
  std::vector<double> all(flat.size() * static_cast<std::size_t>(p));
  if (!flat.empty()) w.all_gather(flat.data(), all.data(), flat.size(), dtype::f64);

  trial_record rec;
  rec.model = ctx.model ? *ctx.model : model_source::inline_model(s.model());
  rec.cluster = s.cluster();
  rec.ranks_per_node = s.ranks_per_node();
  rec.strategy = s.strategy();
  rec.settings = ctx.settings;
  rec.settings.pack = s.packing();  // the session's, whatever the context says
  rec.iterations = iterations_from_ranks(all, p, static_cast<int>(n));
  const auto pred = cost::estimate(s.model(), s.cluster(), s.strategy());
  rec.predicted_iteration = pred.iteration;
  rec.predicted_exposed = pred.exposed;
  rec.environment = host_environment(p, ctx.comm_library, ctx.thread_level, ctx.autosync_version);
  rec.exchange_notes = s.exchange_notes();  // the same on every rank (the exchanges decide alike)
  return rec;
}

}  // namespace autosync::learn
