// autosync/error.hpp — the one exception type of the library.
//
// Every validation failure names the field that is wrong (a JSON-pointer-like path such as
// "groups[3].topology" or "tensors[12].shape[1]") so a user can find it in their file.
#pragma once

#include <charconv>
#include <stdexcept>
#include <string>
#include <utility>

namespace autosync {

class error : public std::runtime_error {
 public:
  error(std::string field, const std::string& what)
      : std::runtime_error(field.empty() ? what : "'" + field + "': " + what), field_(std::move(field)), message_(what) {}
  explicit error(const std::string& what) : std::runtime_error(what), message_(what) {}

  // The path of the offending field ("" when the error is not about one field).
  [[nodiscard]] const std::string& field() const noexcept { return field_; }
  // What is wrong, without the field (and without a location a subclass puts in what()): for
  // rethrowing under another field or option, error(other, e.message()).
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  std::string field_, message_;
};

// The shortest text that reads back as v (1e-09, 0.5, 4096), where std::to_string's six
// decimals print 1e-9 as 0.000000.
[[nodiscard]] inline std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace autosync
