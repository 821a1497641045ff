// The rows of the key table (key_table.h) for the train and evaluation sections.
#include "job/key_table.h"

namespace dlio::workload_internal {

// Data table: the train and evaluation sections.
void AddTrainKeys(std::vector<KeyInfo>& v) {
  // train
  v.push_back(IntKey("train.epochs", &WorkloadSpec::epochs, 1, kMaxEpochs, "epochs"));
  v.push_back(DistributionKey("train.computation_time", &WorkloadSpec::computation_time,
                              "seconds of emulated compute per step: a number or one of DLIO's distributions"));
  v.push_back(StdevKey("train.computation_time_stdev", &WorkloadSpec::computation_time,
                       "with a constant computation_time: normal(computation_time, stdev)"));
  v.push_back(Custom(
      "train.total_training_steps", KeyStatus::kImplemented,
      "caps steps per epoch; <= 0 means no cap (-1); more than the available steps is an error",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        int64_t v;
        if (!ParseInt(n, &v) || v > kMaxSamples) return MustBe(p, "an integer <= 4294967296 (-1 = no cap)", n);
        s.total_training_steps = v > 0 ? v : -1;
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) { return fmt::format("{}", s.total_training_steps); }));
  v.push_back(IntKey("train.seed", &WorkloadSpec::seed, 0, 4294967295, "seed of the shuffles"));
  v.push_back(BoolKey("train.seed_change_epoch", &WorkloadSpec::seed_change_epoch, "shuffle seed = seed + epoch"));

  // evaluation
  v.push_back(DistributionKey("evaluation.eval_time", &WorkloadSpec::eval_time,
                              "seconds of emulated compute per eval step (DLIO's forms)"));
  v.push_back(StdevKey("evaluation.eval_time_stdev", &WorkloadSpec::eval_time,
                       "with a constant eval_time: normal(eval_time, stdev)"));
  v.push_back(IntKey("evaluation.eval_after_epoch", &WorkloadSpec::eval_after_epoch, 1, kMaxEpochs,
                     "first epoch followed by an evaluation"));
  v.push_back(IntKey("evaluation.epochs_between_evals", &WorkloadSpec::epochs_between_evals, 1, kMaxEpochs,
                     "epochs between evaluations"));
}

}  // namespace dlio::workload_internal
