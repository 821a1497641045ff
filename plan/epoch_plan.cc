#include "plan/epoch_plan.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "job/format_traits.h"
#include "base/random.h"
#include "plan/permutation.h"
#include "fmt/format.h"

namespace dlio {
namespace {

// Sample and file ids are uint32 (4 bytes per id where a permutation is stored, plan/permutation.h).
constexpr int64_t kMaxIds = int64_t{1} << 32;

// The seed of one permutation: DLIO's seed (+ epoch when seed_change_epoch), mixed with what is shuffled, so the
// file order and the sample order of an epoch are independent.
enum class Stream : uint64_t { kFiles = 1, kSamples = 2 };
uint64_t PermutationSeed(const PlanParams& p, int64_t epoch, Stream what) {
  uint64_t state = static_cast<uint64_t>(p.seed) + (p.seed_change_epoch ? static_cast<uint64_t>(epoch) : 0);
  uint64_t mixed = SplitMix64(state);
  mixed ^= static_cast<uint64_t>(what) * 0xD6E8FEB86659FD93ull;
  return SplitMix64(mixed);
}

// The file of sample id x (x / spf). Ids and positions are < 2^32 (Validate), so a division by spf is a
// multiplication by recip = ceil(2^64 / spf) (Lemire, Kaser & Kurz 2019: exact for 32-bit numerators and divisors;
// spf 1 would need 2^64, so recip is 0 then); a hardware division per sample was a quarter of RankSamples().
inline uint32_t FileOfSample(uint32_t x, uint64_t spf, uint64_t recip) {
  return spf == 1 ? x : static_cast<uint32_t>((static_cast<unsigned __int128>(recip) * x) >> 64);
}

// Index mode: the samples at positions [begin, begin + count) of the epoch's order, in order, to emit(SampleRef).
// The sample order is read a block of positions at a time (a computed order is up to twice as fast so), the file
// order through one loop per kind (stored, computed, none), chosen once: no branch on the kind per sample. At most
// one of the two is not the identity (EpochPlan::Make).
template <typename Emit>
void ReadOrder(const Permutation& sample_order, const Permutation& file_order, int64_t samples_per_file,
               uint64_t recip, int64_t begin, int64_t count, Emit emit) {
  const auto spf = static_cast<uint64_t>(samples_per_file);
  constexpr int64_t kBlock = 512;
  uint32_t ids[kBlock];
  file_order.Visit([&](auto file_at) {
    for (int64_t done = 0; done < count; done += kBlock) {
      const auto m = static_cast<size_t>(std::min(kBlock, count - done));
      sample_order.Fill(static_cast<uint32_t>(begin + done), m, ids);
      for (size_t j = 0; j < m; ++j) {
        const uint32_t f = FileOfSample(ids[j], spf, recip);
        emit(SampleRef{file_at(f), static_cast<uint32_t>(ids[j] - f * spf)});
      }
    }
  });
}

int64_t Threads(const PlanParams& p) { return std::max<int64_t>(1, p.read_threads); }

// Stream mode: files of rank r (of P, F files) with file sharding = ceil((F - r) / P).
int64_t FilesOfRank(int64_t files, int64_t world, int64_t rank) {
  return files / world + (rank < files % world ? 1 : 0);
}

// DLIO shards files when there are at least as many as ranks, records otherwise.
bool RecordSharding(const PlanParams& p) { return p.num_files < p.world; }

// Stream mode: the records of thread t among the first n positions of a pass (n <= the pass's records). The first
// narrow x S rounds take one record from each of the T threads, the next S rounds one from each wide thread.
int64_t CountBelow(const StreamAssignment& a, size_t t, int64_t n) {
  const auto threads = static_cast<int64_t>(a.threads.size());
  const auto ti = static_cast<int64_t>(t);
  const int64_t lo = a.narrow_files * a.samples_per_file;
  if (n <= threads * lo) return n / threads + (ti < n % threads ? 1 : 0);
  const int64_t n2 = n - threads * lo;
  if (ti >= a.wide_threads) return lo;
  return lo + n2 / a.wide_threads + (ti < n2 % a.wide_threads ? 1 : 0);
}

absl::Status Validate(const PlanParams& p) {
  if (p.num_files < 1) {
    return absl::InvalidArgumentError(fmt::format("{}: must be >= 1, got {}", p.files_key, p.num_files));
  }
  if (p.samples_per_file < 1) {
    return absl::InvalidArgumentError(
        fmt::format("dataset.num_samples_per_file: must be >= 1, got {}", p.samples_per_file));
  }
  if (p.batch < 1) return absl::InvalidArgumentError(fmt::format("{}: must be >= 1, got {}", p.batch_key, p.batch));
  if (p.world < 1) return absl::InvalidArgumentError(fmt::format("world size: must be >= 1, got {}", p.world));
  if (p.num_files >= kMaxIds || p.samples_per_file > kMaxIds / p.num_files) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: {} files x {} samples per file is more than {} samples, the most a plan holds", p.files_key,
        p.num_files, p.samples_per_file, kMaxIds));
  }
  return absl::OkStatus();
}

}  // namespace

AccessMode AccessModeFor(const WorkloadSpec& spec) {
  const FormatTraits* f = FindFormatTraits(spec.format);
  return f != nullptr && f->streams ? AccessMode::kStream : AccessMode::kIndex;
}

PlanParams TrainPlanParams(const WorkloadSpec& spec, int64_t world) {
  PlanParams p;
  p.num_files = spec.num_files_train;
  p.samples_per_file = spec.num_samples_per_file;
  p.batch = spec.batch_size;
  p.world = world;
  p.read_threads = spec.read_threads;
  p.file_shuffle = spec.file_shuffle;
  p.sample_shuffle = spec.sample_shuffle;
  p.seed = spec.seed;
  p.seed_change_epoch = spec.seed_change_epoch;
  p.max_steps = spec.total_training_steps;
  p.mode = AccessModeFor(spec);
  return p;
}

PlanParams EvalPlanParams(const WorkloadSpec& spec, int64_t world) {
  PlanParams p = TrainPlanParams(spec, world);
  p.num_files = spec.num_files_eval;
  p.batch = spec.batch_size_eval;
  p.max_steps = -1;
  p.files_key = "dataset.num_files_eval";
  p.batch_key = "reader.batch_size_eval";
  return p;
}

absl::StatusOr<int64_t> EpochPlan::Steps(const PlanParams& p) {
  if (absl::Status s = Validate(p); !s.ok()) return s;
  const int64_t n = p.num_files * p.samples_per_file;
  // DLIO's steps per epoch in both modes (main.py: samples per file x files / batch / ranks).
  int64_t steps = n / (p.batch * p.world);
  if (steps == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: one step of the fleet needs batch {} x world size {} = {} samples, but the dataset has "
        "only {} ({} {} x dataset.num_samples_per_file {})",
        p.batch_key, p.batch, p.world, p.batch * p.world, n, p.files_key, p.num_files, p.samples_per_file));
  }
  if (p.mode == AccessMode::kStream && !RecordSharding(p)) {
    // The poorest rank (the last one) must form at least one batch per pass over its files.
    const int64_t files = FilesOfRank(p.num_files, p.world, p.world - 1);
    if (files * p.samples_per_file < p.batch) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: rank {} of world size {} streams {} of the {} files ({} {}), {} samples, less than one batch of {}: "
          "DLIO's TensorFlow pipeline (files sharded over ranks, batches with drop_remainder) would give it no "
          "batch and hang; use fewer ranks, a smaller batch or more files",
          p.batch_key, p.world - 1, p.world, files, p.num_files, p.files_key, p.num_files,
          files * p.samples_per_file, p.batch));
    }
  }
  if (p.max_steps > 0) {
    if (p.max_steps > steps) {
      return absl::InvalidArgumentError(fmt::format(
          "train.total_training_steps: {} steps per epoch wanted, but the dataset gives only {} (world size {}, "
          "batch {})",
          p.max_steps, steps, p.world, p.batch));
    }
    steps = p.max_steps;
  }
  return steps;
}

absl::StatusOr<EpochPlan> EpochPlan::Make(const PlanParams& params, int64_t epoch) {
  absl::StatusOr<int64_t> steps = Steps(params);
  if (!steps.ok()) return steps.status();
  EpochPlan plan;
  plan.params_ = params;
  plan.epoch_ = epoch;
  plan.steps_ = *steps;
  const int64_t n = params.num_files * params.samples_per_file;
  plan.dropped_ = n - plan.steps_ * params.batch * params.world;
  if (params.mode == AccessMode::kStream && !RecordSharding(params)) {
    // Per rank: a pass delivers floor(records / B) batches of distinct samples; steps beyond that re-read them.
    // Ranks hold ceil(F/P) files (the first F mod P of them) or floor(F/P).
    plan.dropped_ = plan.reread_ = 0;
    auto account = [&](int64_t files, int64_t ranks) {
      const int64_t records = files * params.samples_per_file;
      const int64_t unique = std::min(plan.steps_, records / params.batch) * params.batch;
      plan.dropped_ += ranks * (records - unique);
      plan.reread_ += ranks * (plan.steps_ * params.batch - unique);
    };
    const int64_t wide = params.num_files % params.world;  // ranks holding one file more than the others
    account(params.num_files / params.world + 1, wide);
    account(params.num_files / params.world, params.world - wide);
  }

  const bool global_sample_shuffle = params.mode == AccessMode::kIndex && params.sample_shuffle != ShuffleMode::kOff;
  if (global_sample_shuffle) {
    // A permutation of all sample ids makes a file permutation redundant: skip it.
    plan.sample_order_ = Permutation::Make(static_cast<uint64_t>(n), PermutationSeed(params, epoch, Stream::kSamples));
  } else if (params.file_shuffle != ShuffleMode::kOff) {
    plan.file_order_ =
        Permutation::Make(static_cast<uint64_t>(params.num_files), PermutationSeed(params, epoch, Stream::kFiles));
  }
  const auto spf = static_cast<uint64_t>(params.samples_per_file);
  plan.spf_reciprocal_ = spf == 1 ? 0 : UINT64_MAX / spf + 1;
  return plan;
}

SampleRef EpochPlan::RankSample(int64_t rank, int64_t i) const {
  const uint32_t id = sample_order_.At(static_cast<uint32_t>(rank * steps_ * params_.batch + i));
  const uint32_t f = FileOfSample(id, static_cast<uint64_t>(params_.samples_per_file), spf_reciprocal_);
  return SampleRef{file_order_.At(f), static_cast<uint32_t>(id - f * static_cast<uint64_t>(params_.samples_per_file))};
}

std::vector<SampleRef> EpochPlan::RankSamples(int64_t rank) const {
  std::vector<SampleRef> out;
  if (params_.mode != AccessMode::kIndex || rank < 0 || rank >= params_.world) return out;
  const int64_t per_rank = steps_ * params_.batch;
  out.reserve(static_cast<size_t>(per_rank));  // push_back below: no zero-filling pass over the list first
  ReadOrder(sample_order_, file_order_, params_.samples_per_file, spf_reciprocal_, rank * per_rank, per_rank,
            [&out](SampleRef s) { out.push_back(s); });
  return out;
}

void EpochPlan::RankSlice(int64_t rank, int64_t first, int64_t count, SampleRef* out) const {
  ReadOrder(sample_order_, file_order_, params_.samples_per_file, spf_reciprocal_,
            rank * steps_ * params_.batch + first, count, [&out](SampleRef s) { *out++ = s; });
}

int64_t StreamAssignment::PassRecords(size_t t) const {
  const int64_t files = narrow_files + (static_cast<int64_t>(t) < wide_threads ? 1 : 0);
  return files * samples_per_file;
}

int64_t StreamAssignment::Position(size_t t, int64_t k) const {
  const auto threads = static_cast<int64_t>(this->threads.size());
  const auto ti = static_cast<int64_t>(t);
  const int64_t lo = narrow_files * samples_per_file;  // records of a narrow thread; wide ones have S more
  const int64_t hi = lo + samples_per_file;
  // Records before round k (every thread gave one per round while it had any), then those of round k before t.
  const int64_t before = wide_threads * std::min(hi, k) + (threads - wide_threads) * std::min(lo, k);
  return before + (k < lo ? ti : std::min(ti, wide_threads));
}

StreamAssignment EpochPlan::RankStream(int64_t rank) const {
  StreamAssignment a;
  if (params_.mode != AccessMode::kStream || rank < 0 || rank >= params_.world) return a;
  const int64_t t_count = Threads(params_);
  const bool record_shard = RecordSharding(params_);
  a.threads.resize(static_cast<size_t>(t_count));
  a.samples_per_file = params_.samples_per_file;
  // The rank's files: list positions rank, rank+P, ... (file sharding) or all of them (record sharding); its j-th
  // file goes to thread j mod T (TF's interleave slot).
  int64_t c = 0;
  for (int64_t pos = record_shard ? 0 : rank; pos < params_.num_files; pos += record_shard ? 1 : params_.world, ++c) {
    const uint32_t file = file_order_.At(static_cast<uint32_t>(pos));
    a.threads[static_cast<size_t>(c % t_count)].files.push_back(file);
  }
  a.narrow_files = c / t_count;
  a.wide_threads = c % t_count;
  const int64_t pass = c * params_.samples_per_file;
  const int64_t want = steps_ * params_.batch;  // records the rank delivers
  int64_t passes = 1, last = 0;                 // passes read, and the positions read in the last one
  if (record_shard) {
    // Every rank streams every file and keeps positions rank, rank + P, ...: it reads up to its last kept one.
    a.keep_every = params_.world;
    a.keep_offset = rank;
    a.deliver_limit = pass;
    last = rank + (want - 1) * params_.world + 1;
  } else {
    const int64_t per_pass = pass / params_.batch;  // >= 1 (Steps() refuses less)
    a.deliver_limit = per_pass * params_.batch;
    const int64_t full = (steps_ - 1) / per_pass;   // passes read to their end (the remainder read and dropped)
    passes = full + 1;
    last = (steps_ - full * per_pass) * params_.batch;
  }
  for (size_t t = 0; t < a.threads.size(); ++t) {
    a.threads[t].records = (passes - 1) * a.PassRecords(t) + CountBelow(a, t, last);
  }
  return a;
}

size_t EpochPlan::MemoryBytes() const {
  return file_order_.MemoryBytes() + sample_order_.MemoryBytes();
}

std::optional<double> DemandBytesPerSecondPerAccelerator(const WorkloadSpec& spec) {
  const double compute = spec.computation_time.Mean();
  if (!(compute > 0)) return std::nullopt;
  return static_cast<double>(spec.batch_size) * spec.record_length_bytes / compute;
}

}  // namespace dlio
