// 13 — the smallest trainer: autosync::session on MPI (README: "Use it in your trainer").
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/session_impl.hpp>    // the session's definitions: in one .cpp of the program
#include <autosync/session_search.hpp>  // rank 0 searches (or pass a strategy_file / strategy_desc)
#include <autosync/zoo/clusters.hpp>
#include <algorithm>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  using namespace autosync;
  exec::mpi_session mpi(argc, argv);
  auto world = exec::mpi_backend::world();
  model_spec model;  // the trainer's tensors in forward order (or io::load_model_file, zoo::make_model)
  model.name = "mlp";
  model.tensors = {{"fc0.weight", {128, 64}}, {"fc0.bias", {128}}, {"fc1.weight", {10, 128}}, {"fc1.bias", {10}}};
  std::vector<std::vector<float>> grads;
  for (const auto& t : model.tensors) grads.emplace_back(t.elements());
  session s(world, model, search_options{zoo::local(world.size())});
  s.on_bucket_done([](const bucket_info& b) { (void)b.completed; /* an optimizer step of these tensors */ });
  for (int step = 0; step < 10; ++step) {
    for (auto& g : grads) std::fill(g.begin(), g.end(), float(world.rank() + step));  // forward + backward
    s.begin(grads);
    for (auto t = model.tensors.size(); t-- > 0;) s.ready(model.tensors[t].name);  // as backward makes them
    s.finish();  // every gradient holds the average over the ranks
  }
  const float expected = float(world.size() - 1) / 2 + 9;
  std::printf("rank %d: fc0.weight[0] = %g, expected %g\n", world.rank(), grads[0][0], expected);
  return grads[0][0] == expected ? 0 : 1;
}
