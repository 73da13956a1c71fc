// autosync/registry/exchange_state.hpp — the bytes a compressor's per-bucket state is saved as.
//
// A compressor that owns its exchange (registry/extensions.hpp) keeps state across iterations:
// error-feedback residuals, PowerSGD's Q, fitted quantization levels, Accordion's detector, an
// iteration count that keys a random stream. To survive a restart that state is written by the
// exchange's save(state_writer&) and read back by load(state_reader&) into an exchange built
// for the same bucket (exec/executor.hpp save_state / load_state frame and check the whole).
//
// The encoding is little-endian fixed-width: a scalar as its bytes, a vector as its length
// (u64) then its elements. A reader never trusts a length: a vector longer than what remains,
// or than the caller's bound, a truncated scalar or bytes left over are autosync::error naming
// the reader's field ("state.buckets[3]") and what it was reading.
#pragma once

#include <autosync/error.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace autosync::registry {

static_assert(std::endian::native == std::endian::little, "exchange state: the byte format is little-endian; a big-endian host needs byte swaps here");

class state_writer {
 public:
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const char*>(&v);
    bytes_.append(p, sizeof v);
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void put(const std::vector<T>& v) {
    put(static_cast<std::uint64_t>(v.size()));
    if (!v.empty()) bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void put_bytes(std::string_view b) {
    put(static_cast<std::uint64_t>(b.size()));
    bytes_.append(b);
  }
  [[nodiscard]] const std::string& bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::string take() noexcept { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class state_reader {
 public:
  state_reader(std::string_view bytes, std::string field) : in_(bytes), field_(std::move(field)) {}

  template <class T>
    requires std::is_trivially_copyable_v<T>
  void get(T& v, const char* what) {
    need(sizeof v, what);
    std::memcpy(&v, in_.data(), sizeof v);
    in_.remove_prefix(sizeof v);
  }
  // A vector of at most `max` elements (its expected size when the caller knows it).
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void get(std::vector<T>& v, const char* what, std::uint64_t max) {
    std::uint64_t n = 0;
    get(n, what);
    if (n > max) throw error(field_, std::string(what) + ": " + std::to_string(n) + " elements, at most " + std::to_string(max) + " expected");
    if (n > in_.size() / sizeof(T))  // no n * sizeof(T) overflow
      throw error(field_, std::string("truncated: ") + what + " claims " + std::to_string(n) + " elements, " + std::to_string(in_.size()) + " bytes left");
    v.resize(static_cast<std::size_t>(n));
    if (n > 0) std::memcpy(v.data(), in_.data(), static_cast<std::size_t>(n) * sizeof(T));
    in_.remove_prefix(static_cast<std::size_t>(n) * sizeof(T));
  }
  // Exactly `n` elements.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void get_exact(std::vector<T>& v, const char* what, std::uint64_t n) {
    get(v, what, n);
    if (v.size() != n) throw error(field_, std::string(what) + ": " + std::to_string(v.size()) + " elements, " + std::to_string(n) + " expected");
  }
  [[nodiscard]] std::string_view get_bytes(const char* what) {
    std::uint64_t n = 0;
    get(n, what);
    need(n, what);
    const auto b = in_.substr(0, static_cast<std::size_t>(n));
    in_.remove_prefix(static_cast<std::size_t>(n));
    return b;
  }
  // Throws when bytes remain: a state written by something else.
  void finish() const {
    if (!in_.empty()) throw error(field_, std::to_string(in_.size()) + " bytes left over after the state: it was written for another compressor or bucket");
  }
  [[nodiscard]] std::size_t remaining() const noexcept { return in_.size(); }
  [[nodiscard]] const std::string& field() const noexcept { return field_; }

 private:
  void need(std::uint64_t n, const char* what) const {
    if (n > in_.size())
      throw error(field_, std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes, " + std::to_string(in_.size()) + " left");
  }
  std::string_view in_;
  std::string field_;
};

}  // namespace autosync::registry
