// `autosync clusters`: the built-in cluster presets (zoo/clusters.hpp), one line per preset.
#include "cli.hpp"

#include <cstdio>
#include <string>

namespace autosync_cli {

subcommand add_clusters(CLI::App& app) {
  auto* sub = app.add_subcommand("clusters", "list the built-in cluster presets");
  return {sub, [](program&) {
            for (auto n : zoo::cluster_names()) {
              const auto c = zoo::make_cluster(n);
              std::printf("  %-20s %3d nodes %4d ranks  %s\n", std::string(n).c_str(), static_cast<int>(c.nodes.size()), c.world_size(),
                          c.device.c_str());
            }
            return 0;
          }};
}

}  // namespace autosync_cli
