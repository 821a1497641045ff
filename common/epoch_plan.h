// EpochPlan: which samples every rank consumes in one epoch, as a pure function of the job.
//
// Coordinator and agents compute it independently from the same WorkloadSpec; nothing ships file lists.
// Two access modes, following DLIO's loaders (../shared/reference/dlio.md §2.4):
//  - kIndex (pytorch-style, every format but tfrecord): the N = files x samples_per_file global sample ids are put
//    in an order (file order permuted by file_shuffle; a real global sample permutation when sample_shuffle is on,
//    fixing DLIO's no-op shuffle), then rank r consumes the contiguous slice [r*S*B, (r+1)*S*B) of that order, where
//    S = steps and B = batch. Batch k of a rank is RankSamples()[k*B, (k+1)*B).
//  - kStream (tfrecord, TF-style): file i (after file_shuffle) belongs to rank i mod P; within a rank, loader thread
//    t streams the rank's files t, t+T, t+2T ... in order and cuts its records into batches of B. Thread t delivers
//    quota[t] batches; the quotas are trimmed so every rank does the same number of steps (a global barrier needs it).
// Steps are the same on every rank: floor(N / (B*P)) in index mode (DLIO's formula), capped by
// total_training_steps when set. Every sample is consumed at most once per epoch; the rest is the drop-last
// remainder, counted in DroppedSamples().
// Seeds: with shuffle mode "seed" the permutation uses seed (+ epoch when seed_change_epoch); "random" uses the seed
// the coordinator drew for the job (it writes it into the normalised spec), so all agents still agree.
// Permutations are our own Fisher-Yates over xoshiro256** seeded through splitmix64 with (seed [+ epoch], what is
// shuffled), so they do not depend on the standard library; a golden test pins them.
// Cost: O(N) time and 4 bytes per sample for index mode with sample_shuffle (10 M samples: ~0.2 s with the rank's
// list, 40 MB; bench/ measures it); without it nothing per sample is stored. RankSamples() materialises only the
// rank's slice (8 bytes per sample).
// Thread-safety: immutable after Make(); const methods are safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/workload_spec.h"

namespace dlio {

enum class AccessMode { kIndex, kStream };

struct SampleRef {
  uint32_t file;    // index into the sorted file list of the split (0 .. num_files-1)
  uint32_t sample;  // sample index inside the file
};

struct PlanParams {
  int64_t num_files = 0;
  int64_t samples_per_file = 1;
  int64_t batch = 1;
  int64_t world = 1;
  int64_t read_threads = 1;  // 0 is treated as 1
  ShuffleMode file_shuffle = ShuffleMode::kOff;
  ShuffleMode sample_shuffle = ShuffleMode::kOff;
  int64_t seed = 123;
  bool seed_change_epoch = true;
  int64_t max_steps = -1;    // total_training_steps; -1 = no cap
  AccessMode mode = AccessMode::kIndex;
  // Key names in error messages (the eval plan names its own keys).
  const char* files_key = "dataset.num_files_train";
  const char* batch_key = "reader.batch_size";
};

AccessMode AccessModeFor(const WorkloadSpec& spec);
PlanParams TrainPlanParams(const WorkloadSpec& spec, int64_t world);
// The evaluation plan: valid/ files, batch_size_eval, no step cap; shuffles as for training.
PlanParams EvalPlanParams(const WorkloadSpec& spec, int64_t world);

struct StreamAssignment {
  std::vector<std::vector<uint32_t>> thread_files;  // per loader thread, files in streaming order
  std::vector<int64_t> thread_batches;              // per loader thread, batches to deliver (sums to steps)
};

class EpochPlan {
 public:
  // Errors (one line, naming the key): zero steps, fewer files than ranks in stream mode, total_training_steps
  // larger than the available steps.
  static absl::StatusOr<EpochPlan> Make(const PlanParams& params, int64_t epoch);
  // The steps per epoch Make() would give (same errors), without building any order: O(1) memory.
  static absl::StatusOr<int64_t> Steps(const PlanParams& params);

  const PlanParams& params() const { return params_; }
  int64_t steps() const { return steps_; }
  // Samples of the whole fleet not consumed this epoch (drop-last remainder and step cap).
  int64_t DroppedSamples() const { return dropped_; }

  // kIndex: the rank's samples in consumption order (steps * batch entries).
  std::vector<SampleRef> RankSamples(int64_t rank) const;
  // kStream: the rank's files split over loader threads, with per-thread batch quotas.
  StreamAssignment RankStream(int64_t rank) const;
  // Heap bytes held by the plan (the permutations), for sizing checks.
  size_t MemoryBytes() const;

 private:
  PlanParams params_;
  int64_t epoch_ = 1;
  int64_t steps_ = 0;
  int64_t dropped_ = 0;
  std::vector<uint32_t> file_order_;    // permuted file ids; empty = identity (file_shuffle off)
  std::vector<uint32_t> sample_order_;  // kIndex with sample_shuffle: permuted global sample ids; else empty
};

}  // namespace dlio
