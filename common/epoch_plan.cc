#include "common/epoch_plan.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "common/random.h"
#include "fmt/format.h"

namespace dlio {
namespace {

// Sample and file ids are uint32 (4 bytes per sample for a shuffled 10 M-sample epoch).
constexpr int64_t kMaxIds = int64_t{1} << 32;

// Our own generator (common/random.h) and Fisher-Yates, so a plan is the same on every agent whatever standard
// library it was built with (std::shuffle's algorithm is implementation-defined).
using Rng = Xoshiro256;

void FisherYates(std::vector<uint32_t>& v, Rng& rng) {
  // The swap partners j are drawn kAhead steps before they are used (the same draws in the same order, so the same
  // permutation) and their cache lines prefetched: a 10 M-entry permutation is 40 MB, and waiting for memory on
  // every random swap was most of EpochPlan::Make's time.
  constexpr size_t kAhead = 16;
  size_t ahead[kAhead];
  const size_t n = v.size();
  size_t drawn = n;  // the next i whose j is drawn (i runs n, n-1, ..., 2)
  auto draw = [&] {
    const size_t j = static_cast<size_t>(rng.Below(drawn));
    ahead[drawn % kAhead] = j;
    __builtin_prefetch(&v[j], 1);
    --drawn;
  };
  while (drawn > 1 && n - drawn < kAhead) draw();
  for (size_t i = n; i > 1; --i) {
    const size_t j = ahead[i % kAhead];
    if (drawn > 1) draw();  // i - kAhead's partner: it lands in ahead[] after j was read
    std::swap(v[i - 1], v[j]);
  }
}

// The seed of one permutation: DLIO's seed (+ epoch when seed_change_epoch), mixed with what is shuffled, so the
// file order and the sample order of an epoch are independent.
enum class Stream : uint64_t { kFiles = 1, kSamples = 2 };
uint64_t PermutationSeed(const PlanParams& p, int64_t epoch, Stream what) {
  uint64_t state = static_cast<uint64_t>(p.seed) + (p.seed_change_epoch ? static_cast<uint64_t>(epoch) : 0);
  uint64_t mixed = SplitMix64(state);
  mixed ^= static_cast<uint64_t>(what) * 0xD6E8FEB86659FD93ull;
  return SplitMix64(mixed);
}

int64_t Threads(const PlanParams& p) { return std::max<int64_t>(1, p.read_threads); }

// Stream mode: files of rank r (of P, F files) = ceil((F - r) / P); files of thread t (of T) among c = ceil((c-t)/T).
int64_t FilesOfRank(int64_t files, int64_t world, int64_t rank) {
  return files / world + (rank < files % world ? 1 : 0);
}

// Batches each loader thread of a rank holding `rank_files` files can form (before trimming).
std::vector<int64_t> ThreadQuotas(const PlanParams& p, int64_t rank_files) {
  const int64_t t_count = Threads(p);
  std::vector<int64_t> q(static_cast<size_t>(t_count));
  for (int64_t t = 0; t < t_count; ++t) {
    const int64_t files = rank_files / t_count + (t < rank_files % t_count ? 1 : 0);
    q[static_cast<size_t>(t)] = files * p.samples_per_file / p.batch;
  }
  return q;
}

int64_t Sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

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
  return spec.format == "tfrecord" ? AccessMode::kStream : AccessMode::kIndex;
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
  int64_t steps = 0;
  if (p.mode == AccessMode::kIndex) {
    steps = n / (p.batch * p.world);
    if (steps == 0) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: one step of the fleet needs batch {} x world size {} = {} samples, but the dataset has "
          "only {} ({} {} x dataset.num_samples_per_file {})",
          p.batch_key, p.batch, p.world, p.batch * p.world, n, p.files_key, p.num_files, p.samples_per_file));
    }
  } else {
    if (p.num_files < p.world) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: {} files for world size {}; tfrecord streams whole files, so every rank needs at "
          "least one file",
          p.files_key, p.num_files, p.world));
    }
    // The ranks hold floor(F/P) or ceil(F/P) files; the fleet does what its poorest rank can.
    steps = Sum(ThreadQuotas(p, FilesOfRank(p.num_files, p.world, p.world - 1)));
    if (steps == 0) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: no full batch of {} samples per loader thread: rank {} streams {} files of {} samples "
          "over reader.read_threads {} ({} {}, world size {})",
          p.batch_key, p.batch, p.world - 1, FilesOfRank(p.num_files, p.world, p.world - 1), p.samples_per_file, Threads(p),
          p.files_key, p.num_files, p.world));
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

  const bool global_sample_shuffle = params.mode == AccessMode::kIndex && params.sample_shuffle != ShuffleMode::kOff;
  if (global_sample_shuffle) {
    // A permutation of all sample ids makes a file permutation redundant: skip it.
    plan.sample_order_.resize(static_cast<size_t>(n));
    std::iota(plan.sample_order_.begin(), plan.sample_order_.end(), uint32_t{0});
    Rng rng(PermutationSeed(params, epoch, Stream::kSamples));
    FisherYates(plan.sample_order_, rng);
  } else if (params.file_shuffle != ShuffleMode::kOff) {
    plan.file_order_.resize(static_cast<size_t>(params.num_files));
    std::iota(plan.file_order_.begin(), plan.file_order_.end(), uint32_t{0});
    Rng rng(PermutationSeed(params, epoch, Stream::kFiles));
    FisherYates(plan.file_order_, rng);
  }
  return plan;
}

std::vector<SampleRef> EpochPlan::RankSamples(int64_t rank) const {
  std::vector<SampleRef> out;
  if (params_.mode != AccessMode::kIndex || rank < 0 || rank >= params_.world) return out;
  const int64_t per_rank = steps_ * params_.batch;
  const int64_t begin = rank * per_rank;
  const auto spf = static_cast<uint64_t>(params_.samples_per_file);
  // Ids and positions are < 2^32 (Validate), so a division by spf is a multiplication by ceil(2^64 / spf) (Lemire,
  // Kaser & Kurz 2019: exact for 32-bit numerators and divisors; spf 1 would need 2^64); a hardware division per
  // sample was a quarter of this function.
  const uint64_t recip = spf == 1 ? 0 : UINT64_MAX / spf + 1;
  auto div = [&](uint32_t x) {
    return spf == 1 ? x : static_cast<uint32_t>((static_cast<unsigned __int128>(recip) * x) >> 64);
  };
  out.reserve(static_cast<size_t>(per_rank));  // push_back below: no zero-filling pass over the list first
  for (int64_t i = 0; i < per_rank; ++i) {
    const auto pos = static_cast<uint32_t>(begin + i);
    if (!sample_order_.empty()) {
      const uint32_t id = sample_order_[pos];
      const uint32_t f = div(id);
      out.push_back(SampleRef{f, static_cast<uint32_t>(id - f * spf)});
    } else {
      const uint32_t f = div(pos);
      out.push_back(SampleRef{file_order_.empty() ? f : file_order_[f], static_cast<uint32_t>(pos - f * spf)});
    }
  }
  return out;
}

StreamAssignment EpochPlan::RankStream(int64_t rank) const {
  StreamAssignment a;
  if (params_.mode != AccessMode::kStream || rank < 0 || rank >= params_.world) return a;
  const int64_t t_count = Threads(params_);
  a.thread_files.resize(static_cast<size_t>(t_count));
  // The rank's files are list positions rank, rank+P, ...; its j-th file goes to thread j mod T.
  int64_t j = 0;
  for (int64_t pos = rank; pos < params_.num_files; pos += params_.world, ++j) {
    const uint32_t file = file_order_.empty() ? static_cast<uint32_t>(pos) : file_order_[static_cast<size_t>(pos)];
    a.thread_files[static_cast<size_t>(j % t_count)].push_back(file);
  }
  a.thread_batches = ThreadQuotas(params_, j);
  // Every rank does the same number of steps: trim the quotas from the last thread backwards.
  int64_t excess = Sum(a.thread_batches) - steps_;
  for (auto it = a.thread_batches.rbegin(); it != a.thread_batches.rend() && excess > 0; ++it) {
    const int64_t cut = std::min(excess, *it);
    *it -= cut;
    excess -= cut;
  }
  return a;
}

size_t EpochPlan::MemoryBytes() const {
  return file_order_.capacity() * sizeof(uint32_t) + sample_order_.capacity() * sizeof(uint32_t);
}

}  // namespace dlio
