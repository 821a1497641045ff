#include "agent/generate_phase.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/dataset_files.h"
#include "agent/phase_context.h"
#include "base/scheduling.h"
#include "base/sleep.h"
#include "readers/format.h"

namespace dlio {

namespace fs = std::filesystem;
using phase_clock::NowUnixUs;

namespace {

// Generation threads per local rank: the cores divided among the ranks. Generation is CPU-bound (random bytes, the
// format library's copies and checksums, e.g. libzip's CRC-32) while a finished file waits for fdatasync, so with
// two or more threads one file's flush overlaps the next file's generation. At most 8: beyond that one rank's
// writes contend for the storage more than they gain.
int GenerationWorkers(int local_ranks) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::clamp<unsigned>(cores / static_cast<unsigned>(std::max(1, local_ranks)), 1u, 8u));
}

// One split of the dataset (train/ or valid/) as the generator writes it: file i belongs to global rank i % world.
struct GenerateSplit {
  const char* name;
  int64_t files;
  int64_t subfolders;
  std::unique_ptr<Format> format;  // with the split's tfrecord index folder
};

// What every rank of a generate phase shares, made once per phase by SetUpGenerate.
struct GenerateSetup {
  bool objects = false;                       // s3: objects appear whole at their final keys (no rename, no fsync)
  std::shared_ptr<const S3Config> s3;         // s3 jobs
  std::string prefix;                         // s3: the data's key prefix
  std::shared_ptr<const ConfinedDir> root;      // POSIX: the data root, where each folder's path is checked from
  std::shared_ptr<const ConfinedDir> data_dir;  // POSIX: the data folder inside the data root; null for s3
  GenerateSplit splits[2];                    // train, valid
  int workers = 1;                            // writer threads per local rank (GenerationWorkers)
};

// Whether file i of a split belongs to one of this agent's local ranks.
bool OwnedHere(const PhaseCommand& cmd, int64_t i) {
  const int64_t owner = i % cmd.world;
  return owner >= cmd.first_rank && owner < cmd.first_rank + cmd.local_ranks;
}

// Multipart uploads a failed earlier run left under this agent's own keys (a gateway that died mid-upload could not
// be told to abort them) are aborted, so the bucket keeps no half-written object. Only this agent's keys: other
// agents may be uploading theirs already.
absl::Status AbortOwnUploads(const PhaseCommand& cmd, const std::string& prefix,
                             const std::shared_ptr<const S3Config>& s3,
                             const GenerateSplit (&splits)[2]) {
  std::set<std::string> my_keys;
  for (const GenerateSplit& sp : splits) {
    for (int64_t i = 0; i < sp.files; ++i) {
      if (!OwnedHere(cmd, i)) continue;
      const std::string key = S3Join(prefix, DataFileRelPath(sp.name, cmd.spec.file_prefix, i, sp.files,
                                                             sp.subfolders, sp.format->extension()));
      for (const std::string& c : sp.format->CompanionPaths(key)) my_keys.insert(c);
      my_keys.insert(key);
    }
  }
  S3Client client(s3);
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> open =
      client.ListMultipartUploads(prefix.empty() ? "" : prefix + "/");
  if (!open.ok()) return open.status();
  for (const auto& [key, id] : *open) {
    if (my_keys.count(key) == 0) continue;
    if (absl::Status s = client.AbortMultipart(key, id); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GenerateSetup>> SetUpGenerate(const PhaseContext& ctx) {
  const PhaseCommand& cmd = ctx.cmd;
  const WorkloadSpec& spec = cmd.spec;
  absl::StatusOr<std::shared_ptr<const S3Config>> s3 = ctx.s3();
  if (!s3.ok()) return s3.status();
  auto setup = std::make_unique<GenerateSetup>();
  setup->s3 = *s3;
  setup->objects = *s3 != nullptr;
  setup->prefix = setup->objects ? spec.S3DataPrefix() : "";
  setup->workers = GenerationWorkers(cmd.local_ranks);
  if (!setup->objects) {
    if (!ctx.root.ok()) return Annotate(ctx.root.status(), ctx.Where(cmd.first_rank));
    absl::StatusOr<std::shared_ptr<const ConfinedDir>> d =
        (*ctx.root)->Sub(spec.data_folder, ConfinedDir::Mode::kCreate, "dataset.data_folder");
    if (!d.ok()) return Annotate(d.status(), ctx.Where(cmd.first_rank));
    setup->root = *ctx.root;
    setup->data_dir = std::move(*d);
  }
  // DLIO generates the files of train/ and, when evaluation files are asked for, of valid/.
  setup->splits[0] = {"train", spec.num_files_train, spec.num_subfolders_train, nullptr};
  setup->splits[1] = {"valid", spec.num_files_eval, spec.num_subfolders_eval, nullptr};
  for (GenerateSplit& sp : setup->splits) {
    absl::StatusOr<std::unique_ptr<Format>> f =
        MakeFormat(spec.format, FormatOptionsFor(spec, setup->data_dir, sp.name, setup->s3));
    if (!f.ok()) return Annotate(f.status(), ctx.Where(cmd.first_rank));
    sp.format = std::move(*f);
  }
  // DLIO's folder layout, empty folders included (its reader lists train/ and valid/ and stops on a missing one).
  // Every agent makes them (idempotent), so a data folder local to each agent's node has them too. A bucket has
  // no folders: a key prefix exists only through the objects under it.
  const ConfinedDir* data = setup->data_dir.get();
  for (const std::string& rel : setup->objects ? std::vector<std::string>()
                                               : DatasetFolders(spec.format, spec.num_files_train,
                                                                spec.num_subfolders_train, spec.num_files_eval,
                                                                spec.num_subfolders_eval)) {
    if (data->MakeParents(rel + "/x") != 0) {  // mkdir -p of `rel` (the parent of rel/x), below the data folder
      const int err = errno;
      return absl::InternalError(absl::StrCat(ctx.Where(cmd.first_rank), ": dataset.data_folder: cannot create '",
                                              data->path(), "/", rel, "': ", data->Explain(rel, err)));
    }
  }
  if (setup->objects) {
    if (absl::Status s = AbortOwnUploads(cmd, setup->prefix, setup->s3, setup->splits); !s.ok()) {
      return Annotate(s, ctx.Where(cmd.first_rank));
    }
  }
  return setup;
}

// What the workers of one generate phase share: its first error and the flag that stops them all.
struct GenerateGroup {
  std::atomic<bool> stop{false};
  FirstError first_error;
};

// One writer thread of one rank: writes the rank's files todo[w], todo[w + W], ... A written file is made durable
// and renamed into place only after the worker generated its next file: Generate() started its writeback, so the
// fdatasync then finds it (mostly) on the storage and the wait overlaps generation instead of following it. The
// data file and its companions (index files) move to their final names together. Each file's folders are held open
// from before it is written (HeldFolder): a folder moved or replaced meanwhile (out of the data root, say) stops the
// phase before the rename, and every temporary file is removed through the held descriptor, wherever it went.
// (Not storage/io_util.h's internal::FileWriter, which writes one file's bytes: this writes a rank's files.)
class GenerateWorker {
 public:
  GenerateWorker(const PhaseContext& ctx, const GenerateSetup& setup, int rank, GenerateGroup& group,
                 IoStats& stats)
      : ctx_(ctx), cmd_(ctx.cmd), setup_(setup), data_(setup.data_dir.get()), rank_(rank), group_(group),
        stats_(stats) {}

  void Run(const std::vector<std::pair<const GenerateSplit*, int64_t>>& todo, size_t w) {
    RequestBulkSlices();
    const size_t workers = static_cast<size_t>(setup_.workers);
    for (size_t k = w; k < todo.size(); k += workers) {
      if (Stopped()) break;
      std::optional<Pending> next = Write(*todo[k].first, todo[k].second);
      if (!next) break;
      if (pending_ && !Complete(*pending_)) {
        pending_.reset();
        Discard(*next);
        break;
      }
      pending_ = std::move(next);
    }
    if (pending_) {
      if (Stopped()) {
        Discard(*pending_);
      } else {
        Complete(*pending_);
      }
    }
  }

 private:
  struct Pending {
    std::vector<std::string> from, to;  // companions first, the data file last
    uint64_t bytes = 0;
    std::vector<std::shared_ptr<const HeldFolder>> folders;  // POSIX: the folder of each `from`, held open
  };

  bool Stopped() const { return group_.stop || ctx_.CancelAsked(); }
  void Fail(const absl::Status& s) {
    group_.first_error.Set(Annotate(s, ctx_.Where(rank_)));
    group_.stop = true;
  }
  void Discard(const Pending& p) {
    if (setup_.objects) return;  // an object that failed was never created (its multipart upload is aborted)
    for (size_t k = 0; k < p.from.size(); ++k) {
      // Through the held folder (wherever it is now), then by path (a folder that replaced it: the name is ours).
      if (k < p.folders.size()) p.folders[k]->Unlink(fs::path(p.from[k]).filename().string());
      data_->Unlink(p.from[k]);
    }
  }
  // `p` failed with `s`: its files removed and the phase stopped, naming a folder moved meanwhile (which makes the
  // opens, syncs and renames by path fail) rather than what failed because of it.
  void Abandon(const Pending& p, const absl::Status& s) {
    const absl::Status moved = InPlace(p);
    Discard(p);
    Fail(moved.ok() ? s : moved);
  }
  // The folders of `p`, each held open before the file is written; an error when one is missing or not in place.
  absl::Status HoldFolders(Pending& p) const {
    for (const std::string& f : p.from) {
      const std::string dir = fs::path(f).parent_path().string();
      if (!p.folders.empty() && p.folders.back()->path() == dir) {
        p.folders.push_back(p.folders.back());
        continue;
      }
      absl::StatusOr<std::shared_ptr<const HeldFolder>> h = HeldFolder::Open(setup_.root, *data_, dir);
      if (!h.ok()) return h.status();
      p.folders.push_back(std::move(*h));
    }
    return InPlace(p);
  }
  static absl::Status InPlace(const Pending& p) {
    for (size_t k = 0; k < p.folders.size(); ++k) {
      if (k > 0 && p.folders[k] == p.folders[k - 1]) continue;
      if (absl::Status s = p.folders[k]->StillInPlace(); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // File i of split `sp` under a temporary name; nullopt (the error recorded) when it failed.
  std::optional<Pending> Write(const GenerateSplit& sp, int64_t i) {
    const WorkloadSpec& spec = cmd_.spec;
    const int64_t n = &sp == &setup_.splits[0] ? i : spec.num_files_train + i;  // numbers files across splits
    const std::string rel =
        DataFileRelPath(sp.name, spec.file_prefix, i, sp.files, sp.subfolders, sp.format->extension());
    const fs::path final_path =
        setup_.objects ? fs::path(S3Join(setup_.prefix, rel)) : fs::path(data_->path()) / rel;
    // Temporary name in the same folder (so rename is atomic), unique per agent process and file.
    const fs::path tmp =
        setup_.objects ? final_path : fs::path(final_path.string() + ".tmp-" + std::to_string(::getpid()));
    const uint64_t before = stats_.Snapshot().bytes;
    // With a size spread every file has its own sample shape, hence its own Format options.
    std::unique_ptr<Format> sized;
    if (spec.record_length_bytes_stdev > 0) {
      FormatOptions o = sp.format->options();
      const int64_t d = spec.SampleDimForFile(n);
      o.sample_dims = {d, d};
      absl::StatusOr<std::unique_ptr<Format>> f = MakeFormat(spec.format, o);
      if (!f.ok()) {
        Fail(f.status());
        return std::nullopt;
      }
      sized = std::move(*f);
    }
    const Format& fmt = sized ? *sized : *sp.format;
    Pending next{fmt.CompanionPaths(tmp.string()), fmt.CompanionPaths(final_path.string()), 0, {}};
    next.from.push_back(tmp.string());
    next.to.push_back(final_path.string());
    if (absl::Status held = setup_.objects ? absl::OkStatus() : HoldFolders(next); !held.ok()) {
      Fail(held);
      return std::nullopt;
    }
    if (absl::Status s = fmt.Generate(tmp.string(), static_cast<uint64_t>(spec.seed) * 1000003u + n, stats_);
        !s.ok()) {
      Abandon(next, s);
      return std::nullopt;
    }
    next.bytes = stats_.Snapshot().bytes - before;
    return next;
  }

  // Makes `p` durable and renames it into place; false (the error recorded, the files removed) when it failed.
  bool Complete(const Pending& p) {
    absl::Status s;
    for (const std::string& f : p.from) {
      if (s.ok() && !setup_.objects) s = SyncGeneratedFile(f, data_);
    }
    if (s.ok()) s = InPlace(p);  // right before the renames: the folders where they were (s3: none)
    for (size_t k = 0; s.ok() && !setup_.objects && k < p.from.size(); ++k) {
      if (data_->Rename(p.from[k], p.to[k]) != 0) {
        s = absl::InternalError(absl::StrCat("rename '", p.from[k], "': ", data_->Explain(p.to[k], errno)));
      }
    }
    if (!s.ok()) {
      Abandon(p, s);
      return false;
    }
    ctx_.progress.done += 1;
    ctx_.progress.samples += cmd_.spec.num_samples_per_file;
    ctx_.progress.bytes += p.bytes;
    return true;
  }

  const PhaseContext& ctx_;
  const PhaseCommand& cmd_;
  const GenerateSetup& setup_;
  const ConfinedDir* data_;  // null for s3
  const int rank_;
  GenerateGroup& group_;
  IoStats& stats_;
  std::optional<Pending> pending_;
};

// One rank of a generate phase: its files (i = rank, rank + world, ... in each split) over setup.workers threads,
// the calling thread one of them.
void GenerateRank(const PhaseContext& ctx, const GenerateSetup& setup, int rank, GenerateGroup& group,
                  RankEpochResult& r) {
  const PhaseCommand& cmd = ctx.cmd;
  r.rank = rank;
  r.epoch = 0;
  r.start_unix_us = NowUnixUs();
  const std::shared_ptr<RankMetrics> rm = ctx.metrics ? ctx.metrics->Rank(cmd.job_id, rank) : nullptr;
  if (rm) rm->SetPhase(RankPhase::kGenerate);
  // This rank's files: i = rank, rank + world, ... in each split.
  std::vector<std::pair<const GenerateSplit*, int64_t>> todo;
  for (const GenerateSplit& sp : setup.splits) {
    for (int64_t i = rank; i < sp.files; i += cmd.world) todo.emplace_back(&sp, i);
  }
  std::vector<IoStats> worker_stats(static_cast<size_t>(setup.workers));
  auto work = [&](size_t w) { GenerateWorker(ctx, setup, rank, group, worker_stats[w]).Run(todo, w); };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < worker_stats.size(); ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
  for (const IoStats& st : worker_stats) r.io += st.Snapshot();
  r.end_unix_us = NowUnixUs();
  if (rm) {
    rm->AddWritten(r.io);
    rm->SetPhase(RankPhase::kIdle);
  }
}

}  // namespace

absl::StatusOr<std::vector<RankEpochResult>> RunGenerate(const PhaseContext& ctx) {
  const PhaseCommand& cmd = ctx.cmd;
  absl::StatusOr<std::unique_ptr<GenerateSetup>> setup = SetUpGenerate(ctx);
  if (!setup.ok()) return setup.status();
  int64_t mine = 0;
  for (const GenerateSplit& sp : (*setup)->splits) {
    for (int64_t i = 0; i < sp.files; ++i) mine += OwnedHere(cmd, i) ? 1 : 0;
  }
  ctx.progress.total = mine;
  std::vector<RankEpochResult> results(cmd.local_ranks);
  GenerateGroup group;
  ForEachLocalRank(cmd, [&](int l, int rank) {
    GenerateRank(ctx, **setup, rank, group, results[static_cast<size_t>(l)]);
  });
  if (absl::Status s = group.first_error.Get(); !s.ok()) return s;
  // storage.post_generation_settle_seconds: an eventually consistent store lists and serves the new objects only
  // after a while; the phase (and so the job's next one) ends after it. A cancel cuts it short.
  SleepFor(cmd.spec.post_generation_settle_seconds, ctx.cancel);
  if (ctx.CancelAsked()) return absl::CancelledError(absl::StrCat(ctx.Where(cmd.first_rank), ": cancelled"));
  return results;
}

}  // namespace dlio
