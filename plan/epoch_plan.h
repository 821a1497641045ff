// EpochPlan: which samples every rank consumes in one epoch, as a pure function of the job.
//
// Coordinator and agents compute it independently from the same WorkloadSpec; nothing ships file lists.
// Two access modes, following DLIO's loaders (../shared/reference/dlio.md §2.4):
//  - kIndex (pytorch-style, every format but tfrecord): the N = files x samples_per_file global sample ids are put
//    in an order (file order permuted by file_shuffle; a real global sample permutation when sample_shuffle is on,
//    fixing DLIO's no-op shuffle), then rank r consumes the contiguous slice [r*S*B, (r+1)*S*B) of that order, where
//    S = steps and B = batch. Batch k of a rank is RankSamples()[k*B, (k+1)*B).
//  - kStream (tfrecord), DLIO's TensorFlow pipeline (its tf_reader.py; ../shared/reference/dlio.md §2.4):
//      TFRecordDataset(files, num_parallel_reads = T) -> [shard records] -> batch(B, drop_remainder) -> repeat().
//    Sharding: with at least as many files as ranks, file i (after file_shuffle, which DLIO does not apply to
//    tfrecord) belongs to rank i mod P; with fewer files than ranks every rank reads every file and keeps record j
//    of the interleaved stream when j mod P = r. The interleave: loader thread t streams the rank's files t, t+T,
//    t+2T ... (TF's cycle slot t, refilled in list order) and the rank's stream takes one record from each live
//    thread in turn; batches are cut from that ONE stream, so a batch holds records of several files and threads.
//    Drop-last: each pass over the rank's files yields floor(records / B) batches and drops the remainder; a rank
//    whose pass gives fewer batches than the epoch's steps starts a new pass (DLIO's repeat(): it re-reads its files
//    from the start), and a rank whose files hold less than one batch is refused (DLIO would give it no batch at
//    all and hang at the first barrier).
// Steps are the same on every rank, DLIO's formula in both modes: floor(N / (B*P)) with N = files x samples per
// file, capped by total_training_steps when set. In index mode every sample is consumed at most once per epoch;
// the rest is the drop-last remainder, counted in DroppedSamples(). In stream mode a rank that wraps around re-reads
// samples (RereadSamples()), and DroppedSamples() counts the samples no rank delivered.
// Seeds: with shuffle mode "seed" the permutation uses seed (+ epoch when seed_change_epoch); "random" uses the seed
// the coordinator drew for the job (it writes it into the normalised spec), so all agents still agree.
// Permutations (plan/permutation.h) are the same on every agent whatever standard library it was built with:
// up to 2^24 ids our own Fisher-Yates over xoshiro256** seeded through splitmix64 with (seed [+ epoch], what is
// shuffled), stored, 4 bytes per id (at most 64 MiB); above that a keyed bijection of the ids (a Feistel network
// with cycle walking, keyed the same way), computed per sample and holding nothing per id. Golden tests pin both.
// Cost: index mode with sample_shuffle is O(N) time for up to 2^24 samples (10 M samples: ~0.2 s with the rank's
// list, 40 MB; bench/ measures it) and O(1) above (2^32 samples: nothing on the heap); without it nothing per
// sample is stored. RankSamples() materialises the rank's slice (8 bytes per sample); RankSample() and RankSlice()
// compute one entry or a run of it without materialising the rest (the agent's loader and cache eviction read
// RankSlice() a slice at a time, so an agent holds nothing per sample of an epoch).
// Thread-safety: immutable after Make(); const methods are safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "job/workload_spec.h"
#include "plan/permutation.h"

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

// kStream: one rank's epoch. Thread t reads threads[t].records records from its files, in order, S records per file
// (S = samples per file), going back to its first file when a pass ends (the rank's pass is pass_records records
// of the interleaved stream). Record k of a pass of thread t sits at stream position Position(t, k); it is
// delivered (a sample of one of the rank's batches) when Delivered(position), otherwise read and dropped. The
// delivered records of all threads sum to steps x B.
struct ThreadStream {
  std::vector<uint32_t> files;  // its files in streaming order (empty: the thread reads nothing)
  int64_t records = 0;          // records it reads this epoch (several passes: more than its files hold)
};

struct StreamAssignment {
  std::vector<ThreadStream> threads;
  int64_t samples_per_file = 1;
  // The interleave of one pass: T threads; threads t < wide_threads hold one file more than the others, which hold
  // narrow_files files each.
  int64_t narrow_files = 0;
  int64_t wide_threads = 0;
  int64_t deliver_limit = 0;  // positions >= this are the pass's drop-last remainder
  int64_t keep_every = 1;     // record sharding (files < ranks): keep position j when j % keep_every == keep_offset
  int64_t keep_offset = 0;

  // Records of thread t per pass.
  int64_t PassRecords(size_t t) const;
  // The stream position of thread t's record k (0 <= k < PassRecords(t)) within a pass. O(1), no allocation.
  int64_t Position(size_t t, int64_t k) const;
  bool Delivered(int64_t position) const {
    return position < deliver_limit && position % keep_every == keep_offset;
  }
};

class EpochPlan {
 public:
  // Errors (one line, naming the key): zero steps, a rank with less than one batch in stream mode,
  // total_training_steps larger than the available steps.
  static absl::StatusOr<EpochPlan> Make(const PlanParams& params, int64_t epoch);
  // The steps per epoch Make() would give (same errors), without building any order: O(1) memory.
  static absl::StatusOr<int64_t> Steps(const PlanParams& params);

  const PlanParams& params() const { return params_; }
  int64_t steps() const { return steps_; }
  // Samples of the whole fleet not consumed this epoch (drop-last remainder and step cap).
  int64_t DroppedSamples() const { return dropped_; }
  // Stream mode: samples the fleet delivers a second (or further) time this epoch, because a rank with fewer files
  // wraps around (DLIO's repeat()); 0 in index mode.
  int64_t RereadSamples() const { return reread_; }

  // kIndex: the rank's samples in consumption order (steps * batch entries).
  std::vector<SampleRef> RankSamples(int64_t rank) const;
  // kIndex: RankSamples(rank)[i] without building the list (0 <= rank < world, 0 <= i < steps * batch): O(1)
  // (expected, for a computed order), no allocation.
  SampleRef RankSample(int64_t rank, int64_t i) const;
  // kIndex: RankSamples(rank)[first, first + count) into out[0, count), without building the list (a loader can read
  // batch k as RankSlice(rank, k * B, B, buffer)); as fast per sample as RankSamples(), no allocation.
  void RankSlice(int64_t rank, int64_t first, int64_t count, SampleRef* out) const;
  // kStream: the rank's files over its loader threads, the records each reads, and which of them are delivered.
  StreamAssignment RankStream(int64_t rank) const;
  // Heap bytes held by the plan (the stored permutations; a computed one holds none), for sizing checks.
  size_t MemoryBytes() const;

 private:
  PlanParams params_;
  int64_t epoch_ = 1;
  int64_t steps_ = 0;
  int64_t dropped_ = 0;
  int64_t reread_ = 0;
  Permutation file_order_;    // position in the file list -> file id; the identity when file_shuffle is off
  Permutation sample_order_;  // kIndex with sample_shuffle: position -> global sample id; else the identity
  uint64_t spf_reciprocal_ = 0;  // ceil(2^64 / samples_per_file), 0 for 1: divides ids by it (epoch_plan.cc)
};

// The bytes per second one accelerator reads at 100 % AU in training: batch_size x record_length_bytes / the mean
// computation_time (dlio.md §3's "demand"); nullopt when the computation time is 0 (the demand is unbounded).
std::optional<double> DemandBytesPerSecondPerAccelerator(const WorkloadSpec& spec);

}  // namespace dlio
