// `autosync learn`: the learned corrections (include/autosync/learn/).
//
//   autosync learn --records a.jsonl [b.jsonl ...] [--holdout 0.3] [--out model.json]
//                  [--emit-header default_model.hpp --name default_model] [--rounds N] [--depth D] [--eta E]
//     joins the records into feature rows, reports on held-out strategies (never the training
//     ones, learn::held_out) the pairwise ranking accuracy and Spearman correlation of the
//     analytical model, the analytical model + the learned correction, and AutoSync's linear
//     model on its 12 features (learn::rank_held_out); then trains on every record and writes
//     the XGBoost JSON model and/or the embedded-model header (gbt::emit_header) with the
//     evidence box of the training rows (gbt/evidence_box.hpp, cost::default_correction).
//
//   autosync learn --collectives cases.json [--folds 5] [--out model.json]
//                  [--emit-header default_collective_model.hpp --name ...] [--rounds N] [--depth D] [--eta E]
//     the collective-level correction (learn/collectives.hpp): one row per size of every
//     nccl-tests log the manifest pairs with a cluster, costed on that machine calibrated from 4
//     of its sizes; reports per case the median relative error of the calibrated model and of the
//     corrected one on held-out rows (each machine left out whole, and k folds over rows), then
//     trains on every row and writes the model with its evidence box.
#include "cli.hpp"

#include <autosync/gbt/emit.hpp>
#include <autosync/gbt/xgboost.hpp>
#include <autosync/learn/collectives.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/learn/metrics.hpp>
#include <autosync/learn/records.hpp>
#include <autosync/learn/train.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace autosync_cli {
namespace {

struct learn_opts {
  std::vector<std::string> records;
  std::string collectives;           // a manifest (learn/collectives.hpp) instead of records
  double holdout = 0.3;
  std::size_t folds = 5;
  std::string out, header, name;     // name "": default_model / default_collective_model
  int rounds = 0, depth = 0;         // 0: the default of the kind of data (see add_learn)
  double eta = 0.0;
};

#if defined(AUTOSYNC_HAS_XGBOOST)
// The parameters: the kind's defaults, overridden by the flags given.
learn::xgb_params params_of(const learn_opts& o, learn::xgb_params p) {
  if (o.rounds != 0) p.rounds = o.rounds;
  if (o.depth != 0) p.max_depth = o.depth;
  if (o.eta != 0.0) p.eta = o.eta;
  return p;
}

// The evidence box as C++ (gbt/evidence_box.hpp), appended to the emitted forest.
template <std::size_t N>
std::string box_text(const gbt::evidence_box<N>& b, const std::string& name) {
  const auto hex = [](float v) { return gbt::detail::emit::hex(v); };  // inf as numeric_limits'
  bool infinite = std::isinf(b.y_lo) || std::isinf(b.y_hi);
  for (std::size_t i = 0; i < N; ++i) infinite = infinite || std::isinf(b.lo[i]) || std::isinf(b.hi[i]);
  std::string ns, var = name;
  if (const auto k = name.rfind("::"); k != std::string::npos) {
    ns = name.substr(0, k);
    var = name.substr(k + 2);
  }
  std::ostringstream s;
  s << "\n// Where the forest has evidence (gbt/evidence_box.hpp): the training rows' feature and target ranges.\n"
    << "#include <autosync/gbt/evidence_box.hpp>\n" << (infinite ? "\n#include <limits>\n" : "") << "\n";
  if (!ns.empty()) s << "namespace " << ns << " {\n\n";
  s << "inline constexpr autosync::gbt::evidence_box<" << N << "> " << var << "_box{\n    .lo = {";
  for (std::size_t i = 0; i < b.lo.size(); ++i) s << (i ? ", " : "") << hex(b.lo[i]);
  s << "},\n    .hi = {";
  for (std::size_t i = 0; i < b.hi.size(); ++i) s << (i ? ", " : "") << hex(b.hi[i]);
  s << "},\n    .y_lo = " << hex(b.y_lo) << ",\n    .y_hi = " << hex(b.y_hi) << "};\n";
  if (!ns.empty()) s << "\n}  // namespace " << ns << "\n";
  return s.str();
}

// Writes the model: XGBoost JSON (--out) and/or the embedded-model header (--emit-header) with
// `preamble` (comment lines) above gbt::emit_header's text and the evidence box of the training
// rows below it.
template <std::size_t N>
void write_model(const learn_opts& o, const learn::bounded_xgb_booster<N>& b, const std::string& name, const std::string& preamble,
                 const std::string& what) {
  if (!o.out.empty()) {
    b.booster.save_json(o.out);
    std::cout << "wrote " << o.out << " (XGBoost JSON, " << what << ")\n";
  }
  if (!o.header.empty()) {
    const auto f = gbt::parse_xgboost_json(b.booster.json(), "<trained model>");
    std::ofstream h(o.header, std::ios::binary);
    h << preamble << gbt::emit_header(f, name) << box_text(b.box, name);
    h.close();
    if (!h) throw error("--emit-header", "cannot write '" + o.header + "'");
    std::cout << "wrote " << o.header << " (constexpr forest '" << name << "')\n";
  }
}

// "(XGBoost, 100 rounds, depth 3, eta 0.15)" for the header comment.
std::string trained_with(const learn::xgb_params& p) {
  std::ostringstream s;
  s << "(XGBoost, " << p.rounds << " rounds, depth " << p.max_depth << ", eta " << p.eta << ")";
  return s.str();
}

// The header comment's last lines: how to regenerate it, with the parameters that differ from
// the kind's defaults.
std::string regenerate_lines(const std::string& args, const learn::xgb_params& p, const learn::xgb_params& d) {
  std::ostringstream s;
  s << "// Regenerate (from the repository root, after building the autosync command):\n//   build/bin/autosync learn " << args;
  if (p.rounds != d.rounds) s << " --rounds " << p.rounds;
  if (p.max_depth != d.max_depth) s << " --depth " << p.max_depth;
  if (p.eta != d.eta) s << " --eta " << p.eta;
  s << "\n";
  return s.str();
}
#endif

[[noreturn]] void needs_xgboost() {
  throw error("`autosync learn` trains with XGBoost: this autosync was built without it (install Debian's libxgboost-dev, "
              "`cmake/setup-deps.sh --xgboost`, and rebuild)");
}

int learn_collectives(const learn_opts& o) {
  const auto m = learn::load_collective_cases(o.collectives);
  const auto rows = learn::load_collective_samples(m);
  std::cout << "autosync learn: " << rows.size() << " rows of " << m.cases.size() << " nccl-tests cases ("
            << std::filesystem::path(o.collectives).filename().string() << "), each costed on its machine calibrated from "
            << learn::sample_options{}.calibration_sizes << " of its sizes\n";
  if (rows.size() < 2) throw error("--collectives", "too few rows to train on (" + std::to_string(rows.size()) + ")");
  if (o.folds < 2 || o.folds > rows.size()) throw error("--folds", "must be in [2, rows]");
#if defined(AUTOSYNC_HAS_XGBOOST)
  const auto defaults = learn::collective_xgb_params();
  const auto p = params_of(o, defaults);
  const auto y_lomo = learn::leave_one_machine_out(m, rows, p), y_kf = learn::k_fold(rows, o.folds, p);
  auto lomo = learn::median_errors(m, rows, y_lomo), kf = learn::median_errors(m, rows, y_kf);
  std::vector<double> cal, cor;
  for (const auto& c : lomo) {
    cal.push_back(c.analytical);
    cor.push_back(c.corrected);
  }
  lomo.push_back(learn::overall_errors(rows, y_lomo));
  kf.push_back(learn::overall_errors(rows, y_kf));
  std::printf("held-out median relative error      rows  calibrated  machine left out  %zu-fold\n", o.folds);
  // "-": no held-out prediction (the manifest has one machine: none is left to train on)
  const auto cell = [](double v, int width) {
    char buf[32];
    if (std::isnan(v)) std::snprintf(buf, sizeof buf, "%*s", width, "-");
    else std::snprintf(buf, sizeof buf, "%*.3f", width, v);
    return std::string(buf);
  };
  for (std::size_t c = 0; c < lomo.size(); ++c)
    std::printf("  %-34s %4zu  %10.3f  %s  %s\n", lomo[c].label.c_str(), lomo[c].rows, lomo[c].analytical,
                cell(lomo[c].corrected, 16).c_str(), cell(kf[c].corrected, 6).c_str());
  std::erase_if(cor, [](double v) { return std::isnan(v); });
  std::printf("  %-34s       %10.3f  %s\n", "median over logs", learn::median(cal), cell(learn::median(cor), 16).c_str());
  if (cor.empty()) std::printf("  (leave one machine out needs the logs of two machines or more)\n");
  const auto b = learn::train_bounded_collective_booster(rows, p);
  std::ostringstream pre;
  pre << "// The collective-level learned correction of cost/collective_features.hpp: y = log(measured /\n"
         "// model) of one collective from cost::collective_features (machine-relative), the model being the\n"
         "// NCCL model on each machine calibrated from 4 of its sizes, trained by `autosync learn`\n"
         "// "
      << trained_with(p) << " on " << rows.size() << " rows of the nccl-tests logs of "
      << std::filesystem::path(o.collectives).filename().string() << ":\n";
  for (const auto& c : m.cases)
    pre << "//   " << c.file << (c.section.empty() ? "" : " " + c.section) << "  (" << name_of(c.algorithm) << ", " << c.cluster.name << ")\n";
  pre << "// Leave one machine out, median relative error over logs: calibrated " << learn::median(cal) << ", corrected "
      << learn::median(cor) << "; over all rows " << lomo.back().analytical << ", " << lomo.back().corrected << ".\n";
  pre << regenerate_lines("--collectives tests/data/collectives/nccl_cases.json --emit-header include/autosync/gbt/default_collective_model.hpp "
                          "--name autosync::gbt::default_collective_model",
                          p, defaults);
  const std::string name = o.name.empty() ? "default_collective_model" : o.name;
  write_model(o, b, name, pre.str(), std::to_string(p.rounds) + " trees on " + std::to_string(rows.size()) + " rows");
  return 0;
#else
  needs_xgboost();
#endif
}

// The options' own checks, before any file is read: --name must be a C++ name the header can
// declare, and a records file given twice would count its records twice.
void check_learn_opts(const learn_opts& o) {
  if (!o.name.empty()) {
    static constexpr std::string_view keywords[] = {
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char",
        "char8_t", "char16_t", "char32_t", "class", "co_await", "co_return", "co_yield", "compl", "concept", "const", "consteval",
        "constexpr", "constinit", "const_cast", "continue", "decltype", "default", "delete", "do", "double", "dynamic_cast",
        "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long",
        "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected",
        "public", "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static", "static_assert",
        "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid",
        "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
    std::string_view rest = o.name;
    while (true) {
      const auto cut = rest.find("::");
      const std::string_view part = rest.substr(0, cut);
      const bool ident = !part.empty() && (std::isalpha(static_cast<unsigned char>(part[0])) || part[0] == '_') &&
                         std::all_of(part.begin(), part.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
      if (!ident || std::find(std::begin(keywords), std::end(keywords), part) != std::end(keywords))
        throw error("--name", "must be a C++ name, namespaces joined by ::, none of them a keyword (e.g. my::correction), got '" +
                                  o.name + "'");
      if (cut == std::string_view::npos) break;
      rest = rest.substr(cut + 2);
    }
    // names the header would collide with: the standard library's namespace, main, the
    // project's own namespaces (autosync::gbt is a namespace, not a variable)
    const std::string_view n = o.name;
    static constexpr std::string_view taken[] = {"autosync", "autosync::gbt", "autosync::cost", "autosync::learn", "autosync::detail",
                                                 "autosync::io", "autosync::search", "autosync::exec", "autosync::zoo", "main"};
    if (n == "std" || n.starts_with("std::") || std::find(std::begin(taken), std::end(taken), n) != std::end(taken))
      throw error("--name", "'" + o.name + "' would collide with a namespace or function the header sees (e.g. my::correction)");
    if (o.header.empty()) throw error("--name", "names the forest of --emit-header: give --emit-header too");
  }
  // the output files: fail now, not after the training
  // one file for two outputs, or an output over an input, would lose one of them
  const auto same = [](const std::string& a, const std::string& b) {
    std::error_code e1, e2;
    const auto ca = std::filesystem::weakly_canonical(a, e1), cb = std::filesystem::weakly_canonical(b, e2);
    return !e1 && !e2 && ca == cb;
  };
  if (!o.out.empty() && !o.header.empty() && same(o.out, o.header))
    throw error("--emit-header", "'" + o.header + "' is also the --out file: one would overwrite the other");
  for (const auto* f : {&o.out, &o.header}) {
    if (f->empty()) continue;
    const char* opt = f == &o.out ? "--out" : "--emit-header";
    for (const auto& r : o.records)
      if (same(*f, r)) throw error(opt, "'" + *f + "' is a --records input: writing it would destroy the records");
    if (!o.collectives.empty() && same(*f, o.collectives))
      throw error(opt, "'" + *f + "' is the --collectives manifest: writing it would destroy it");
  }
  if (!o.out.empty()) check_writable(o.out, "--out");
  if (!o.header.empty()) check_writable(o.header, "--emit-header");
  for (std::size_t i = 0; i < o.records.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      std::error_code ec;
      if (std::filesystem::equivalent(o.records[i], o.records[j], ec) && !ec)
        throw error("--records", "'" + o.records[i] + "' is given twice (as '" + o.records[j] + "'): its records would count twice");
    }
}

int run_learn(const learn_opts& o) {
  check_learn_opts(o);
  if (!o.collectives.empty()) return learn_collectives(o);
  if (o.records.empty()) throw error("--records", "give at least one records file (or --collectives MANIFEST)");
  if (!(o.holdout >= 0.0 && o.holdout < 1.0)) throw error("--holdout", "must be in [0, 1)");
  std::vector<learn::record_origin> origins;  // each record's file and line, for the errors of make_samples
  const auto recs = learn::read_record_files(
      o.records, [](const learn::skipped_line& s) { std::cerr << "autosync: warning: skipped a truncated last line: " << s.message << "\n"; },
      &origins);
  std::size_t other_packing = 0;
  const auto samples = learn::make_samples(recs, &other_packing, origins);
  if (other_packing > 0)
    std::cout << "autosync learn: left out " << other_packing << " record(s) run with `--pack always|never` (settings.pack): "
              << "the correction serves the default executor\n";
  std::vector<learn::sample> train, test;
  for (const auto& s : samples) (learn::held_out(s, o.holdout) ? test : train).push_back(s);
  std::cout << "autosync learn: " << samples.size() << " records, " << train.size() << " for training, " << test.size()
            << " held out (by strategy)\n";
  if (train.size() < 2) throw error("--records", "too few records to train on (" + std::to_string(train.size()) + ")");
#if defined(AUTOSYNC_HAS_XGBOOST)
  const learn::xgb_params defaults{};
  const auto p = params_of(o, defaults);
  if (!test.empty()) {
    const auto r = learn::rank_held_out(train, test, p);
    std::printf("held-out ranking            pairwise   Spearman\n");
    std::printf("  analytical                 %6.3f     %6.3f\n", r.analytical.pairwise, r.analytical.spearman);
    std::printf("  analytical + GBT           %6.3f     %6.3f\n", r.corrected.pairwise, r.corrected.spearman);
    std::printf("  linear, 12 AutoSync feat.  %6.3f     %6.3f\n", r.linear.pairwise, r.linear.spearman);
  }
  const auto all = learn::train_bounded_booster(samples, p);
  std::ostringstream pre;
  pre << "// The learned correction of cost/corrected.hpp: y = log(measured / analytical iteration) from\n"
         "// cost::compute_features, trained by `autosync learn` "
      << trained_with(p) << " on " << samples.size() << " trial records of\n//";
  for (const auto& r : o.records) pre << " " << std::filesystem::path(r).filename().string();
  pre << "\n"
      << regenerate_lines("--records tests/data/trials/*.jsonl --emit-header include/autosync/gbt/default_model.hpp --name autosync::gbt::default_model",
                          p, defaults);
  const std::string name = o.name.empty() ? "default_model" : o.name;
  write_model(o, all, name, pre.str(), std::to_string(p.rounds) + " trees on " + std::to_string(samples.size()) + " records");
  return 0;
#else
  needs_xgboost();
#endif
}

}  // namespace

subcommand add_learn(CLI::App& app) {
  auto lo = std::make_shared<learn_opts>();
  auto* sub = app.add_subcommand("learn", "train a learned correction (strategies from trial records, or collectives from "
                                          "nccl-tests logs) and report its held-out accuracy");
  auto* records = sub->add_option("--records", lo->records, "trial records files (JSON Lines): the strategy-level correction")
                      ->expected(1, -1);
  auto* colls = sub->add_option("--collectives", lo->collectives,
                                "a manifest of nccl-tests logs and their clusters (tests/data/collectives/nccl_cases.json): "
                                "the collective-level correction");
  records->excludes(colls);
  // each report's option refuses the other kind of data (it would be ignored)
  sub->add_option("--holdout", lo->holdout, "--records: fraction of strategies held out for the report")
      ->capture_default_str()
      ->excludes(colls);
  sub->add_option("--folds", lo->folds, "--collectives: folds of the k-fold report over rows")
      ->check(whole_number(2, 1000))
      ->capture_default_str()
      ->excludes(records);
  sub->add_option("--out", lo->out, "write the model trained on every row as XGBoost JSON");
  sub->add_option("--emit-header", lo->header, "write the model as a C++ header with a constexpr forest");
  sub->add_option("--name", lo->name, "the forest's name in the header (default: default_model, default_collective_model)");
  sub->add_option("--rounds", lo->rounds, "boosting rounds (default: 200 for --records, 50 for --collectives)")
      ->check(whole_number(1, 100'000));
  sub->add_option("--depth", lo->depth, "tree depth (default: 4 for --records, 2 for --collectives)")->check(whole_number(1, 20));
  sub->add_option("--eta", lo->eta, "learning rate (default: 0.1 for --records and --collectives)")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            double v = 0.0;
            try {
              std::size_t used = 0;
              v = std::stod(s, &used);
              if (used != s.size()) v = std::nan("");
            } catch (const std::exception&) {
              v = std::nan("");
            }
            return v > 0.0 && v <= 1.0 ? "" : "must be a number in (0, 1], got '" + s + "'";
          },
          "", "learning_rate"));
  return {sub, [lo](program&) { return run_learn(*lo); }};
}

}  // namespace autosync_cli
