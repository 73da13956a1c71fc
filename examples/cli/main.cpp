// The `autosync` command: search a synchronization strategy for a model on a cluster, explain,
// save or emit it, run it for real on MPI, learn from the runs. One file per subcommand in this
// folder (cli.hpp says how they register):
//
//   autosync                                   optimize bert-large on p3.16xlarge-x4 (the default job)
//   autosync optimize [--model NAME|FILE] [--cluster NAME|FILE] [--seed N] [--json]
//                     [--out strategy.json] [--emit-header strategy.hpp] [--timeline timeline.svg]
//   autosync models | clusters
//   autosync explain strategy.json [--model NAME|FILE] [--cluster NAME|FILE] [--timeline t.svg]
//   mpirun -np N autosync calibrate --out cluster.json [--max-bytes B] [--budget-s S]
//   autosync calibrate --nccl-tests LOG --nodes N --devices-per-node G [--sizes B1,...] --out cluster.json
//   autosync collective --cluster NAME|FILE [--op all_reduce] --bytes B1,B2,... [--json]
//   mpirun -np N autosync run --strategy s.json [--model NAME|FILE] [--scale X] [--cluster NAME|FILE]
//                     [--ranks-per-node N] [--iters N] [--warmup K] [--compute-scale X]
//                     [--records trials.jsonl] [--seed N]
//   autosync sample --model NAME|FILE [--scale X] --cluster NAME|FILE --out-dir DIR [--count N] [--seed N]
//                     [--baselines] [--search] [--allow-lossy [--compressors a,b] [--max-compression-ratio R]]
//                     [--max-runs N] [--model-out m.json]
//   autosync learn --records a.jsonl ... | --collectives cases.json   (learn.cpp)
//   autosync tune --model M --cluster C --records r.jsonl ...            (tune.cpp)
//
// Exit codes: 0 success, 1 bad input (unknown name, malformed file: the message names the file,
// line and field), 2 usage error.
#include "cli.hpp"

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  using namespace autosync_cli;
  CLI::App app{"autosync: find the best way to synchronize gradients for a model on a cluster"};
  app.require_subcommand(0, 1);
  const subcommand optimize = add_optimize(app);
  const subcommand all[] = {optimize,       add_models(app), add_clusters(app), add_explain(app), add_run(app),
                            add_calibrate(app), add_collective(app), add_learn(app), add_tune(app), add_sample(app)};

  // `autosync --model x ...` means `autosync optimize --model x ...`
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0].starts_with("--") && args[0] != "--help") args.insert(args.begin(), "optimize");
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments in reverse order
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  program prog{argc, argv};
  try {
    for (const auto& s : all)
      if (*s.app) return s.run(prog);
    return optimize.run(prog);  // no subcommand: the default job
  } catch (const std::exception& e) {
    std::cerr << "autosync: error: " << e.what() << "\n";
    return 1;
  }
}
