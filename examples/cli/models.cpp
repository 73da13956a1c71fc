// `autosync models`: the built-in model zoo (zoo/models.hpp), one line per model.
#include "cli.hpp"

#include <autosync/io/report.hpp>

#include <cstdio>
#include <string>

namespace autosync_cli {

subcommand add_models(CLI::App& app) {
  auto* sub = app.add_subcommand("models", "list the built-in models");
  return {sub, [](program&) {
            for (auto n : zoo::model_names()) {
              const auto m = zoo::make_model(n);
              std::printf("  %-14s %4zu tensors %14lld parameters  %10s\n", std::string(n).c_str(), m.tensors.size(),
                          static_cast<long long>(m.total_elements()), io::human_bytes(double(m.total_bytes())).c_str());
            }
            return 0;
          }};
}

}  // namespace autosync_cli
