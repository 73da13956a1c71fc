// autosync/io/json.hpp — models, clusters and strategies as JSON files, with precise errors.
//
// API (namespace autosync::io):
//   load_model_file(path), load_cluster_file(path), load_strategy_file(path [, model, cluster])
//   save_model_file(path, m), save_cluster_file(path, c), save_strategy_file(path, s)
//   parse_model(text, file), parse_cluster(...), parse_strategy(text [, model, cluster], file)
//   to_json_text(x) (the file text), to_json(x) (an ordered_json), model_from_json(j), ...
// plus nlohmann ADL hooks in namespace autosync: `nlohmann::json j = m; j.get<strategy_desc>()`.
//
// Writing emits the compact forms (a bare string where a policy has no number) and omits
// fields that hold their default; reading accepts both forms. from_json(to_json(x)) == x for
// every valid x.
//
// Errors. Every problem is an autosync::error whose message reads like a compiler's:
//
//   model.json:14: 'tensors[3].shape[1]': must be positive, got -2
//   cluster.json:3:18: 'nodes[0]': syntax error while parsing object - unexpected ']'; ...
//
// Syntax errors come from nlohmann's parser (a byte offset, turned into line:column here).
// Semantic errors (a wrong type, an unknown name or key, a number out of range, a duplicate
// key, and whatever model/cluster/strategy validate() find) carry a field path; a small
// tokenizer over the raw text (detail::json_text) maps that path back to the line of the
// value, falling back to the closest enclosing value that exists in the file:
//
//   text ──nlohmann SAX──> json ──read_*()──> spec ──validate()──> spec
//     │        │ byte offset            │ field path          │ field path
//     └────────┴──── json_text: offset -> line:col, path -> line ──> file_error
//
// The parts: io/json/text.hpp (located errors, the tokenizer, parse_text), io/json/fields.hpp
// (reading one field), io/json/pretty.hpp (the text layout), and one header per format:
// io/json/model.hpp, io/json/cluster.hpp, io/json/strategy.hpp (each documents its fields).
#pragma once

#include <autosync/io/json/cluster.hpp>
#include <autosync/io/json/fields.hpp>
#include <autosync/io/json/model.hpp>
#include <autosync/io/json/pretty.hpp>
#include <autosync/io/json/strategy.hpp>
#include <autosync/io/json/text.hpp>
