// The rows of the key table (key_table.h) for the checkpoint section.
#include "base/sleep.h"
#include "job/key_table.h"

namespace dlio::workload_internal {

// Data table: the checkpoint section.
void AddCheckpointKeys(std::vector<KeyInfo>& v) {
  const Gate ckpt = Gate::kCheckpoint;
  const std::string off;  // the status column says it all
  v.push_back(StringKey("checkpoint.checkpoint_folder", &WorkloadSpec::checkpoint_folder, false,
                        "relative to the agent's --data-root; a path escaping it is refused"));
  v.push_back(IntKey("checkpoint.checkpoint_after_epoch", &WorkloadSpec::checkpoint_after_epoch, 1, kMaxEpochs,
                     "first epoch that ends with a checkpoint (when steps_between_checkpoints < 0)"));
  v.push_back(IntKey("checkpoint.epochs_between_checkpoints", &WorkloadSpec::epochs_between_checkpoints, 1, kMaxEpochs,
                     "epochs between end-of-epoch checkpoints"));
  v.push_back(IntKey("checkpoint.steps_between_checkpoints", &WorkloadSpec::steps_between_checkpoints, -1, kMaxSamples,
                     ">= 1: a checkpoint after every N steps of each epoch, in lockstep inside the training phase "
                     "(and no end-of-epoch checkpoint); 0: none; -1: epoch-based"));
  v.push_back(NotYet("checkpoint.type", "rank_zero", ckpt, "parsed but unused by DLIO"));
  v.push_back(NotYet("checkpoint.mode", "default", ckpt, off));
  KeyInfo fsync = BoolKey("checkpoint.fsync", &WorkloadSpec::checkpoint_fsync,
                          "fsync every checkpoint file before its rename, and its folder after (warns: DLIO assigns "
                          "it to a misspelled attribute, so DLIO never fsyncs)");
  fsync.status = KeyStatus::kImplementedDiffers;
  fsync.gate = ckpt;
  fsync.differs = [](const YAML::Node& n, const WorkloadSpec&) -> std::string {
    bool b = false;
    return ParseBool(n, &b) && b ? "true fsyncs every checkpoint file here; DLIO assigns it to a misspelled attribute "
                                   "(checkpoint_sync), so its checkpoints are never fsynced"
                                 : "";
  };
  v.push_back(fsync);
  v.push_back(NumberKey("checkpoint.time_between_checkpoints", &WorkloadSpec::time_between_checkpoints, -1, false, kMaxSleepSeconds,
                        "checkpoint-only mode: seconds slept before each save and each load (< 0: none)"));
  v.push_back(IntKey("checkpoint.num_checkpoints_write", &WorkloadSpec::num_checkpoints_write, -1, kMaxEpochs,
                     "checkpoint-only mode: saves global_epoch1_step1..N (< 0: none)"));
  v.push_back(IntKey("checkpoint.num_checkpoints_read", &WorkloadSpec::num_checkpoints_read, -1, kMaxEpochs,
                     "checkpoint-only mode: then loads global_epoch1_step1..M, which must exist (< 0: none)"));
  KeyInfo shift = BoolKey("checkpoint.recovery_rank_shift", &WorkloadSpec::recovery_rank_shift,
                          "loads: rank r reads the files of rank (r + ranks per agent) % world, so no rank reads "
                          "what its own node wrote (warns: DLIO assigns it to a misspelled attribute and never "
                          "shifts)");
  shift.status = KeyStatus::kImplementedDiffers;
  shift.gate = ckpt;
  shift.differs = [](const YAML::Node& n, const WorkloadSpec&) -> std::string {
    bool b = false;
    return ParseBool(n, &b) && b ? "true makes rank r read the checkpoint files of rank (r + ranks per agent) mod "
                                   "world here; DLIO assigns it to a misspelled attribute, so its ranks always read "
                                   "their own files"
                                 : "";
  };
  v.push_back(shift);
  v.push_back(BoolKey("checkpoint.rank_sync", &WorkloadSpec::checkpoint_rank_sync,
                      "a barrier over all ranks after each save or load, inside its timing"));
  v.push_back(NotYet("checkpoint.randomize_tensor", "true", ckpt, off));
  v.push_back(NotYet("checkpoint.checkpoint_mechanism_classname", "~", ckpt, off));
  v.push_back(NotYet("checkpoint.ksm.madv_mergeable_id", "12", ckpt, off));
  v.push_back(NotYet("checkpoint.ksm.high_ram_trigger", "30.0", ckpt, off));
  v.push_back(NotYet("checkpoint.ksm.low_ram_exit", "15", ckpt, off));
  v.push_back(NotYet("checkpoint.ksm.await_time", "200", ckpt, off));
  v.push_back(ModelSizeAliasKey("checkpoint.model_size"));
}

}  // namespace dlio::workload_internal
