// autosync/exec/codecs/accordion.hpp — Accordion's switching rule (Agarwal et al., MLSys 2021).
//
// Accordion runs a compressor at one of two levels per group (PowerSGD rank 1 <-> 4, top-k 1 %
// <-> 99 %, int8 <-> none) and switches from how fast the gradient changes:
//
//   every `interval` steps (the reference: switch_freq epochs) each group's gradient norm over
//   the interval is recorded; at a decision, with the norm recorded one interval earlier:
//       ratio = |norm_old - norm_now| / norm_old
//       ratio >= eta (0.5)  ->  critical regime  ->  the LOW-compression level
//       otherwise           ->  the HIGH-compression level
//   the first interval is always low compression (no history yet).
//
// Rank 0 decides and broadcasts one byte per group (the executor does it), so every rank
// switches alike; the decision and the ratio go into the trial records. On a switch the
// compressor's state is reset (PyTorch's PowerSGD keeps Q per rank: a new rank needs a new Q;
// top-k keeps its residual, which stays valid at any density).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace autosync::exec::codecs::accordion {

enum class level : std::uint8_t { low_compression, high_compression };

struct options {
  double eta = 0.5;           // the reference's hard-coded threshold
  std::int64_t interval = 1;  // steps between decisions (the reference: switch_freq epochs)
};

struct decision {
  level chosen = level::low_compression;
  double ratio = 0.0;         // |old - now| / old, or +inf with no history
};

// One group's detector.
struct detector {
  double accumulated = 0.0;   // sum of squared gradient elements over the current interval
  double previous = -1.0;     // the last interval's norm (-1: none yet)
  std::int64_t steps = 0;
  level current = level::low_compression;
  friend bool operator==(const detector&, const detector&) = default;

  // Adds one step's squared norm; at the end of an interval returns true and fills `d`.
  bool observe(double squared_norm, const options& o, decision& d) {
    accumulated += squared_norm;
    if (++steps % (o.interval > 0 ? o.interval : 1) != 0) return false;
    const double now = std::sqrt(accumulated);
    accumulated = 0.0;
    if (previous < 0.0) {
      d = {level::low_compression, INFINITY};
    } else {
      const double ratio = previous > 0.0 ? std::abs(previous - now) / previous : (now > 0.0 ? INFINITY : 0.0);
      d = {ratio >= o.eta ? level::low_compression : level::high_compression, ratio};
    }
    previous = now;
    current = d.chosen;
    return true;
  }
};

}  // namespace autosync::exec::codecs::accordion
