// libnccl-tuner-autosync.so — the NCCL tuner plugin of autosync (include/autosync/plugin/
// nccl_tuner.hpp has what it does). NCCL looks up, newest first, ncclTunerPlugin_v6, _v5, _v4:
// this library exports all three, so NCCL 2.24 .. 2.30 load it.
//
//   NCCL_TUNER_PLUGIN=autosync             (or the path of this file)
//   AUTOSYNC_TUNER_CLUSTER=dgx-h100-x4     (optional: a preset or a cluster JSON file)
//   AUTOSYNC_TUNER_STRATEGY=strategy.json  (optional: the searched strategy's topology decides)
//   AUTOSYNC_TUNER_CORRECTION=default      (optional: AllReduce by times corrected with the model
//                                           learned from nccl-tests logs, or a model JSON file)
//   NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING   shows every choice
#include <autosync/plugin/nccl_tuner.hpp>

#define AUTOSYNC_EXPORT __attribute__((visibility("default")))

extern "C" AUTOSYNC_EXPORT const autosync::plugin::tuner_v6 ncclTunerPlugin_v6 = autosync::plugin::make_v6();
extern "C" AUTOSYNC_EXPORT const autosync::plugin::tuner_v5 ncclTunerPlugin_v5 = autosync::plugin::make_v5();
extern "C" AUTOSYNC_EXPORT const autosync::plugin::tuner_v4 ncclTunerPlugin_v4 = autosync::plugin::make_v4();

// Pins (see nccl_tuner.hpp): the next communicator created in this process takes the pin
// (NCCL algorithm numbers, -1: none; (-1, -1) withdraws a pending pin); returns 0, or 1 for a
// value that is no NCCL algorithm.
extern "C" AUTOSYNC_EXPORT int autosync_tuner_pin_next(int all_reduce_algo, int rs_ag_algo) {
  return autosync::plugin::entry::pin_next(all_reduce_algo, rs_ag_algo);
}
// 1 and the pin of the live communicator `comm_id` (NCCL's commId, v5 / v6), else 0.
extern "C" AUTOSYNC_EXPORT int autosync_tuner_pinned(std::uint64_t comm_id, int* all_reduce_algo, int* rs_ag_algo) {
  return autosync::plugin::entry::pinned(comm_id, all_reduce_algo, rs_ag_algo);
}
