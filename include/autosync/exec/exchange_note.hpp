// autosync/exec/exchange_note.hpp — what a compressor's exchange reported while it ran.
//
// A compressor that owns its exchange (registry/extensions.hpp) may report its decisions through
// registry::exchange_context::note, e.g. Accordion's level and detection ratio
// (compressors/accordion.hpp). The executor keeps each note with its bucket and the bucket's
// exchange count when it was made; session::exchange_notes() returns them and
// learn::record_trial writes them into the trial record ("exchange_notes").
#pragma once

#include <cstdint>
#include <string>

namespace autosync::exec {

struct exchange_note {
  std::uint32_t bucket = 0;    // the plan's bucket
  std::int64_t iteration = 0;  // the bucket's exchanges before this one (0: its first iteration)
  std::string key;             // e.g. "accordion.level"
  double value = 0.0;
  friend bool operator==(const exchange_note&, const exchange_note&) = default;
};

}  // namespace autosync::exec
