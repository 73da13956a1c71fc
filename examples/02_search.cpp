// 02 — search: the best strategy for BERT-base on 4 x p3.16xlarge, next to what people use.
//
// search::optimize seeds itself with every baseline, so the result is never predicted worse
// than the best of them; it is deterministic for a seed. Lossy compression is opt-in.
#include <autosync/search/optimizer.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <cstdio>

int main() {
  using namespace autosync;
  const auto m = zoo::make_model("bert-base");
  const auto c = zoo::make_cluster("p3.16xlarge-x4");
  search::options o;
  o.seed = 7;
  const search::result r = search::optimize(m, c, o);

  std::printf("%s on %s: %zu groups, predicted %.2f ms (%zu strategies costed in %.0f ms)\n", m.name.c_str(), c.name.c_str(),
              r.strategy.groups.size(), r.prediction.iteration * 1e3, r.evaluated, r.wall_seconds * 1e3);
  for (const auto& b : r.baselines)
    std::printf("  %-26s %9.2f ms  (autosync %.2fx)\n", b.name.c_str(), b.prediction.iteration * 1e3,
                b.prediction.iteration / r.prediction.iteration);
}
