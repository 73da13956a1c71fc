// autosync/gbt/model_error.hpp — the error the model loaders throw: it names the source (file
// name), the line when the format has lines, and the field. read_model_file: a model file's text.
//
//   what(): "model.json: 'learner.gradient_booster.model.trees[3].left_children[5]': out of range"
//           "model.txt:42: 'Tree=3.threshold[1]': is NaN"
#pragma once

#include <autosync/error.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace autosync::gbt {

class model_error : public error {
 public:
  model_error(std::string_view source, std::size_t line, const std::string& field, const std::string& message)
      : error(field, message), source_(source), line_(line) {
    text_ = source_ + (line_ != 0 ? ":" + std::to_string(line_) : std::string()) + ": " +
            (field.empty() ? std::string() : "'" + field + "': ") + message;
  }
  [[nodiscard]] const char* what() const noexcept override { return text_.c_str(); }
  [[nodiscard]] const std::string& source() const noexcept { return source_; }
  [[nodiscard]] std::size_t line() const noexcept { return line_; }  // 1-based; 0 when the format has no lines

 private:
  std::string source_;
  std::size_t line_ = 0;
  std::string text_;
};

// The whole text of a model file. Throws model_error (the path as source) when the path is a
// directory or cannot be opened.
[[nodiscard]] inline std::string read_model_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw model_error(path.string(), 0, "", "is a directory, not a model file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw model_error(path.string(), 0, "", "cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace autosync::gbt
