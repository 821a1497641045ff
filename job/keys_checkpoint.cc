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
  v.push_back(Custom(
      "checkpoint.type", KeyStatus::kLabel,
      "rank_zero or all_ranks: a label, parsed and never read, as in DLIO (which ranks write follows "
      "model.parallelism.zero_stage); all_ranks warns that it changes nothing",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"rank_zero", "all_ranks"}, {}, "checkpoint type", &s.checkpoint_type);
      },
      [](const WorkloadSpec& s) { return Quote(s.checkpoint_type); }));
  v.push_back(Custom(
      "checkpoint.mode", KeyStatus::kImplemented,
      "default: the world is the whole job (DP = world / (TP x PP)); subset: the world writes only its ranks' share "
      "of a job of TP x PP x model.parallelism.data ranks (which it needs; the world may not exceed that job)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"default", "subset"}, {}, "checkpoint mode", &s.checkpoint_mode);
      },
      [](const WorkloadSpec& s) { return Quote(s.checkpoint_mode); }));
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
  v.push_back(BoolKey("checkpoint.randomize_tensor", &WorkloadSpec::checkpoint_randomize_tensor,
                      "true: checkpoint files hold random bytes (neither compressible nor deduplicable within a "
                      "64 MiB buffer); false: constant bytes (0x01, DLIO's ones), which a compressing or "
                      "deduplicating store shrinks"));
  v.push_back(NotYet("checkpoint.checkpoint_mechanism_classname", "~", ckpt, off));
  // DLIO's KSM mode madvise(MADV_MERGEABLE)s its in-memory tensors so the kernel merges identical pages; no
  // checkpoint is held in memory here (files are written from one reusable buffer), so there is nothing to merge.
  const std::string ksm = "DLIO's KSM mode (madvise MADV_MERGEABLE on its in-memory tensors); a label here: "
                          "checkpoints are written from one reusable buffer, so agent memory stays small anyway";
  v.push_back(Label("checkpoint.ksm.madv_mergeable_id", "12", ksm));
  v.push_back(Label("checkpoint.ksm.high_ram_trigger", "30.0", ksm));
  v.push_back(Label("checkpoint.ksm.low_ram_exit", "15", ksm));
  v.push_back(Label("checkpoint.ksm.await_time", "200", ksm));
  v.push_back(ModelSizeAliasKey("checkpoint.model_size"));
}

}  // namespace dlio::workload_internal
