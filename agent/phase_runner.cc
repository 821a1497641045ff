#include "agent/phase_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/checkpointer.h"
#include "agent/loader.h"
#include "base/scheduling.h"
#include "base/sleep.h"
#include "agent/step_barrier.h"
#include "plan/checkpoint_plan.h"
#include "plan/epoch_plan.h"
#include "plan/checkpoint_schedule.h"
#include "plan/epoch_plan.h"
#include "base/mutex.h"
#include "readers/format.h"
#include "storage/storage.h"

namespace dlio {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

namespace {

int64_t NowUnixUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }
int64_t Nanos(SteadyClock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

// The format's options from the job for the files of `split` ("train" or "valid"). `data_dir` locates the
// tfrecord DALI index folder (DLIO: <data_folder>/index/<split>, flat even with subfolders).
// s3 jobs: `s3` is the bucket, `data_dir` null, and paths are object keys (the index folder then a key prefix).
FormatOptions FormatOptionsFor(const WorkloadSpec& spec, std::shared_ptr<const ConfinedDir> data_dir,
                               const std::string& split, const std::shared_ptr<const S3Config>& s3 = nullptr) {
  FormatOptions o;
  o.dir = data_dir;
  o.samples_per_file = spec.num_samples_per_file;
  o.sample_dims = spec.SampleShape();
  o.element_type = spec.record_element_type;
  o.hdf5_chunk_dims = spec.Hdf5ChunkDims();
  o.hdf5_num_dset_per_record = spec.hdf5_num_dset_per_record;
  o.hdf5_max_shape = spec.hdf5_max_shape;
  o.compression = spec.compression;
  o.compression_level = spec.compression_level;
  o.transfer_size = spec.transfer_size;
  if (spec.format == "tfrecord" && data_dir) o.tfrecord_index_dir = data_dir->path() + "/index/" + split;
  // The spec was validated when loaded: an unknown engine name cannot reach this point.
  if (absl::StatusOr<IoEngine> e = ParseIoEngine(spec.io_engine); e.ok()) o.io_engine = *e;
  o.read_in_memory = spec.read_type == "memory";
  if (s3) {
    o.io_engine = IoEngine::kS3;
    o.s3 = s3;
    if (spec.format == "tfrecord") o.tfrecord_index_dir = S3Join(spec.S3DataPrefix(), "index/" + split);
  }
  return o;
}

// Generation threads per local rank: the cores divided among the ranks. Generation is CPU-bound (random bytes, the
// format library's copies and checksums, e.g. libzip's CRC-32) while a finished file waits for fdatasync, so with
// two or more threads one file's flush overlaps the next file's generation. At most 8: beyond that one rank's
// writes contend for the storage more than they gain.
int GenerationWorkers(int local_ranks) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::clamp<unsigned>(cores / static_cast<unsigned>(std::max(1, local_ranks)), 1u, 8u));
}

// Drops the page cache of `paths` (posix_fadvise DONTNEED after an fdatasync-free flush: the files are read-only
// here, so there are no dirty pages to lose). Errors name the file.
absl::Status EvictFiles(const ConfinedDir& dir, const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    const int fd = dir.Open(path, O_RDONLY);
    if (fd < 0) return absl::InternalError(absl::StrCat("dlio_ext.evict_cache: open '", path, "': ", std::strerror(errno)));
    const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    if (rc != 0) {
      return absl::InternalError(absl::StrCat("dlio_ext.evict_cache: posix_fadvise '", path, "': ", std::strerror(rc)));
    }
  }
  return absl::OkStatus();
}

absl::Status Annotate(const absl::Status& s, const std::string& where) {
  return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
}

// What every rank of a phase needs to checkpoint: the job's plan and the folder inside the data root.
struct CheckpointSetup {
  CheckpointPlan plan;
  std::shared_ptr<const ConfinedDir> folder;  // POSIX: inside the data root
  std::string s3_prefix;                      // s3: the key prefix of the checkpoints in the bucket
  std::shared_ptr<const S3Config> s3;         // s3 jobs
};

absl::StatusOr<CheckpointSetup> MakeCheckpointSetup(const WorkloadSpec& spec, int world,
                                                    const absl::StatusOr<std::shared_ptr<const ConfinedDir>>& root,
                                                    const std::shared_ptr<const S3Config>& s3) {
  absl::StatusOr<CheckpointModel> model = CheckpointModelFor(spec);
  if (!model.ok()) return model.status();
  absl::StatusOr<CheckpointPlan> plan = MakeCheckpointPlan(*model, world);
  if (!plan.ok()) return plan.status();
  if (s3) return CheckpointSetup{std::move(*plan), nullptr, spec.S3CheckpointPrefix(), s3};
  if (!root.ok()) return root.status();
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> folder =
      (*root)->Sub(spec.checkpoint_folder, ConfinedDir::Mode::kCreate, "checkpoint.checkpoint_folder");
  if (!folder.ok()) return folder.status();
  return CheckpointSetup{std::move(*plan), std::move(*folder), "", nullptr};
}

// dlio_ext.checkpoint_bandwidth_limit: one limiter for every rank of this agent, for one phase; null when uncapped.
std::unique_ptr<BandwidthLimiter> CheckpointLimiter(const WorkloadSpec& spec) {
  if (spec.checkpoint_bandwidth_limit <= 0) return nullptr;
  BandwidthLimiter::Options lo;
  lo.bytes_per_second = static_cast<double>(spec.checkpoint_bandwidth_limit);
  return std::make_unique<BandwidthLimiter>(lo);
}

// Random checkpoint bytes that differ between ranks and jobs' seeds.
uint64_t CheckpointSeed(const WorkloadSpec& spec, int rank) {
  return static_cast<uint64_t>(spec.seed) * 0x2545F4914F6CDD1Dull ^ (static_cast<uint64_t>(rank) << 24);
}

// One save or load by one rank: (evict the files' pages before a load when asked), write or read the files, then
// the rank_sync barrier when set, all inside the timing except the eviction.
absl::StatusOr<RankCheckpointResult> TakeCheckpoint(const WorkloadSpec& spec, const CheckpointSetup& setup,
                                                    Checkpointer& io, int rank, int world, int ranks_per_agent,
                                                    bool load, int index, int epoch, int64_t step,
                                                    const std::function<absl::Status()>& rank_sync,
                                                    RankMetrics* rm) {
  const int source = load ? LoadSourceRank(spec, rank, world, ranks_per_agent) : rank;
  const std::vector<CheckpointFile>& files = setup.plan.ranks[static_cast<size_t>(source)].files;
  const std::string dir = CheckpointDirName(epoch, step);
  if (load && spec.checkpoint_evict_cache) {
    if (absl::Status s = io.Evict(dir, files); !s.ok()) return s;
  }
  RankCheckpointResult r;
  r.rank = rank;
  r.index = index;
  r.load = load;
  r.epoch = epoch;
  r.start_unix_us = NowUnixUs();
  const auto t0 = SteadyClock::now();
  absl::StatusOr<CheckpointIo> done = load ? io.Load(dir, files) : io.Save(dir, files);
  if (!done.ok()) return done.status();
  if (spec.checkpoint_rank_sync) {
    if (absl::Status s = rank_sync(); !s.ok()) return s;
  }
  const auto t1 = SteadyClock::now();
  r.duration_s = Seconds(t1 - t0);
  r.end_unix_us = NowUnixUs();
  r.bytes = static_cast<uint64_t>(done->bytes);
  if (rm) {
    rm->RecordCheckpoint(load, static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()),
                         r.bytes);
  }
  return r;
}

// Runs body(local, rank) for every local rank of the phase (local = 0 .. local_ranks-1, rank = first_rank + local),
// each on a thread of its own, and returns when all are done. Every phase's ranks run through here.
// A single local rank (one accelerator per agent, the common case) runs on the calling (phase) thread: no thread to
// create at an epoch's start and none to join at its end, a wake-up that on a busy host delayed the PhaseDone by up
// to several ms per epoch boundary (bench/RESULTS.md, case f).
void ForEachLocalRank(const PhaseCommand& cmd, const std::function<void(int local, int rank)>& body) {
  if (cmd.local_ranks == 1) return body(0, cmd.first_rank);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(cmd.local_ranks));
  for (int l = 0; l < cmd.local_ranks; ++l) threads.emplace_back(body, l, cmd.first_rank + l);
  for (auto& t : threads) t.join();
}

}  // namespace

// Records the first error of a group of threads (the caller then cancels the rest).
class PhaseRunner::FirstError {
 public:
  void Set(absl::Status s) {
    MutexLock lk(&mu_);
    if (status_.ok()) status_ = std::move(s);
  }
  absl::Status Get() {
    MutexLock lk(&mu_);
    return status_;
  }

 private:
  Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

std::string PhaseRunner::Where(const PhaseCommand& cmd, int rank) const {
  return absl::StrCat("agent '", agent_, "' rank ", rank, " job ", cmd.job_id, " phase ", cmd.phase_id);
}

absl::StatusOr<std::shared_ptr<const S3Config>> PhaseRunner::S3For(const PhaseCommand& cmd) {
  if (!cmd.spec.IsS3()) return std::shared_ptr<const S3Config>();
  if (s3_config_ && s3_job_ == cmd.job_id) return s3_config_;
  absl::StatusOr<std::shared_ptr<const S3Config>> c = S3ConfigFor(cmd.spec, s3_defaults_);
  if (!c.ok()) return Annotate(c.status(), Where(cmd, cmd.first_rank));
  // The job's first phase here: the bucket and credentials, and (when the data should be there) the first object.
  std::string first;
  if (cmd.kind == PhaseKind::kTrainEpoch || cmd.kind == PhaseKind::kEval) {
    const bool eval = cmd.kind == PhaseKind::kEval;
    absl::StatusOr<std::unique_ptr<Format>> f =
        MakeFormat(cmd.spec.format, FormatOptionsFor(cmd.spec, {}, eval ? "valid" : "train", *c));
    if (f.ok()) {
      absl::StatusOr<std::vector<std::string>> keys =
          ListDataObjects(*c, cmd.spec.S3DataPrefix(), eval ? "valid" : "train", (*f)->extension(), 1,
                          eval ? "dataset.num_files_eval" : "dataset.num_files_train");
      if (keys.ok()) first = (*keys)[0];
    }
  }
  if (absl::Status s = S3Preflight(*c, first); !s.ok()) return Annotate(s, Where(cmd, cmd.first_rank));
  s3_job_ = cmd.job_id;
  s3_config_ = *c;
  return s3_config_;
}

absl::StatusOr<std::vector<RankEpochResult>> PhaseRunner::Run(const PhaseCommand& cmd, const BarrierFn& barrier,
                                                              const std::atomic<bool>* cancel) {
  progress_.done = 0;
  progress_.total = 0;
  progress_.samples = 0;
  progress_.bytes = 0;
  progress_.compute_ns = 0;
  progress_.wall_ns = 0;
  // Object storage: the phase's S3 requests are the process-wide total's growth (one phase runs at a time).
  const S3Snapshot s3_before = cmd.spec.IsS3() ? S3Metrics::Global().Snapshot() : S3Snapshot();
  absl::StatusOr<std::vector<RankEpochResult>> r =
      cmd.kind == PhaseKind::kGenerate     ? Generate(cmd, cancel)
      : cmd.kind == PhaseKind::kCheckpoint ? CheckpointPhase(cmd, barrier, cancel)
                                           : Steps(cmd, barrier, cancel);
  if (r.ok() && !r->empty() && cmd.spec.IsS3()) {
    (*r)[0].s3 = S3Difference(S3Metrics::Global().Snapshot(), s3_before);
  }
  // Read buffers are pooled from epoch to epoch (storage/storage.h); after the job's last phase (or a failure, which
  // ends the job) an idle agent keeps none.
  const bool last = cmd.kind == PhaseKind::kGenerate ? !cmd.spec.train : cmd.epoch >= cmd.spec.epochs;
  if (last || !r.ok()) {
    TrimBufferPool();
    pools_.clear();
    pools_job_.clear();
  }
  return r;
}

absl::StatusOr<std::vector<std::string>> ListDataFiles(const ConfinedDir& data_dir, const std::string& split,
                                                       const std::string& ext, int64_t count,
                                                       const std::string& count_key, const std::string& hint) {
  const std::string dir = data_dir.path() + "/" + split;
  std::vector<std::string> files;
  const std::string suffix = "." + ext;
  // Data files only: the extension filter already leaves out companion files (indexed_binary's `<name>.off.idx`
  // and `<name>.sz.idx` end in .idx) and the agents' temporary names (`<name>.tmp-<pid>`). No link is followed
  // (base/confined_dir.h): a symbolic link here is refused, not silently skipped.
  std::function<absl::Status(const std::string&, bool)> list = [&](const std::string& folder,
                                                                  bool descend) -> absl::Status {
    absl::StatusOr<std::vector<ConfinedDir::Entry>> entries = data_dir.List(folder);
    if (!entries.ok()) return entries.status();
    for (const ConfinedDir::Entry& e : *entries) {
      const std::string path = folder + "/" + e.name;
      if (e.type == ConfinedDir::Entry::Type::kLink) {
        return absl::PermissionDeniedError(absl::StrCat("dataset.data_folder: '", path, "' is a symbolic link; the "
                                                        "agent follows none below its data root (docs/fleet.md)"));
      }
      if (e.type == ConfinedDir::Entry::Type::kDir && descend) {
        if (absl::Status s = list(path, false); !s.ok()) return s;
      } else if (e.type == ConfinedDir::Entry::Type::kFile && e.name.size() > suffix.size() &&
                 e.name.compare(e.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        files.push_back(path);
      }
    }
    return absl::OkStatus();
  };
  if (absl::Status s = list(dir, true); !s.ok()) {
    if (s.code() != absl::StatusCode::kNotFound) return s;
    return absl::NotFoundError(absl::StrCat("dataset.data_folder: cannot list ", s.message(),
                                            " (generate the dataset with workflow.generate_data: true)", hint));
  }
  // DLIO sorts by path (by basename when subfolders are used); the padded names make both orders equal. The
  // basenames are cut once: building two fs::paths per comparison made this ~0.7 ms of every epoch's start for
  // 128 files.
  std::vector<std::pair<std::string, std::string>> keyed;  // (basename, path)
  keyed.reserve(files.size());
  for (std::string& f : files) {
    std::string base = fs::path(f).filename().string();
    keyed.emplace_back(std::move(base), std::move(f));
  }
  std::sort(keyed.begin(), keyed.end());
  for (size_t i = 0; i < keyed.size(); ++i) files[i] = std::move(keyed[i].second);
  if (static_cast<int64_t>(files.size()) < count) {
    return absl::NotFoundError(absl::StrCat(count_key, ": ", count, " .", ext, " files expected under '", dir,
                                            "', found ", files.size(),
                                            " (generate them with workflow.generate_data: true)", hint));
  }
  files.resize(count);
  return files;
}

// One split of the dataset (train/ or valid/) as the generator writes it: file i belongs to global rank i % world.
struct GenerateSplit {
  const char* name;
  int64_t files;
  int64_t subfolders;
  std::unique_ptr<Format> format;  // with the split's tfrecord index folder
};

struct PhaseRunner::GenerateSetup {
  bool objects = false;                       // s3: objects appear whole at their final keys (no rename, no fsync)
  std::shared_ptr<const S3Config> s3;         // s3 jobs
  std::string prefix;                         // s3: the data's key prefix
  std::shared_ptr<const ConfinedDir> data_dir;  // POSIX: the data folder inside the data root; null for s3
  GenerateSplit splits[2];                    // train, valid
  int workers = 1;                            // writer threads per local rank (GenerationWorkers)
};

namespace {

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

}  // namespace

absl::StatusOr<std::unique_ptr<PhaseRunner::GenerateSetup>> PhaseRunner::SetUpGenerate(const PhaseCommand& cmd) {
  const WorkloadSpec& spec = cmd.spec;
  absl::StatusOr<std::shared_ptr<const S3Config>> s3 = S3For(cmd);
  if (!s3.ok()) return s3.status();
  auto setup = std::make_unique<GenerateSetup>();
  setup->s3 = *s3;
  setup->objects = *s3 != nullptr;
  setup->prefix = setup->objects ? spec.S3DataPrefix() : "";
  setup->workers = GenerationWorkers(cmd.local_ranks);
  if (!setup->objects) {
    if (!root_.ok()) return Annotate(root_.status(), Where(cmd, cmd.first_rank));
    absl::StatusOr<std::shared_ptr<const ConfinedDir>> d =
        (*root_)->Sub(spec.data_folder, ConfinedDir::Mode::kCreate, "dataset.data_folder");
    if (!d.ok()) return Annotate(d.status(), Where(cmd, cmd.first_rank));
    setup->data_dir = std::move(*d);
  }
  // DLIO generates the files of train/ and, when evaluation files are asked for, of valid/.
  setup->splits[0] = {"train", spec.num_files_train, spec.num_subfolders_train, nullptr};
  setup->splits[1] = {"valid", spec.num_files_eval, spec.num_subfolders_eval, nullptr};
  for (GenerateSplit& sp : setup->splits) {
    absl::StatusOr<std::unique_ptr<Format>> f =
        MakeFormat(spec.format, FormatOptionsFor(spec, setup->data_dir, sp.name, setup->s3));
    if (!f.ok()) return Annotate(f.status(), Where(cmd, cmd.first_rank));
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
      return absl::InternalError(absl::StrCat(Where(cmd, cmd.first_rank), ": dataset.data_folder: cannot create '",
                                              data->path(), "/", rel, "': ", data->Explain(rel, err)));
    }
  }
  if (setup->objects) {
    if (absl::Status s = AbortOwnUploads(cmd, setup->prefix, setup->s3, setup->splits); !s.ok()) {
      return Annotate(s, Where(cmd, cmd.first_rank));
    }
  }
  return setup;
}

// One writer thread of one rank: writes the rank's files todo[w], todo[w + W], ... A written file is made durable
// and renamed into place only after the worker generated its next file: Generate() started its writeback, so the
// fdatasync then finds it (mostly) on the storage and the wait overlaps generation instead of following it. The
// data file and its companions (index files) move to their final names together.
class PhaseRunner::FileWriter {
 public:
  FileWriter(PhaseRunner& runner, const PhaseCommand& cmd, const GenerateSetup& setup, int rank,
             std::atomic<bool>& stop, FirstError& first_error, const std::atomic<bool>* cancel, IoStats& stats)
      : runner_(runner), cmd_(cmd), setup_(setup), data_(setup.data_dir.get()), rank_(rank), stop_(stop),
        first_error_(first_error), cancel_(cancel), stats_(stats) {}

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
  };

  bool Stopped() const { return stop_ || (cancel_ && *cancel_); }
  void Fail(const absl::Status& s) {
    first_error_.Set(Annotate(s, runner_.Where(cmd_, rank_)));
    stop_ = true;
  }
  void Discard(const Pending& p) {
    if (setup_.objects) return;  // an object that failed was never created (its multipart upload is aborted)
    for (const std::string& f : p.from) data_->Unlink(f);
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
    Pending next{fmt.CompanionPaths(tmp.string()), fmt.CompanionPaths(final_path.string()), 0};
    next.from.push_back(tmp.string());
    next.to.push_back(final_path.string());
    if (absl::Status s = fmt.Generate(tmp.string(), static_cast<uint64_t>(spec.seed) * 1000003u + n, stats_);
        !s.ok()) {
      Discard(next);
      Fail(s);
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
    for (size_t k = 0; s.ok() && !setup_.objects && k < p.from.size(); ++k) {
      if (data_->Rename(p.from[k], p.to[k]) != 0) {
        s = absl::InternalError(absl::StrCat("rename '", p.from[k], "': ", data_->Explain(p.to[k], errno)));
      }
    }
    if (!s.ok()) {
      Discard(p);
      Fail(s);
      return false;
    }
    runner_.progress_.done += 1;
    runner_.progress_.samples += cmd_.spec.num_samples_per_file;
    runner_.progress_.bytes += p.bytes;
    return true;
  }

  PhaseRunner& runner_;
  const PhaseCommand& cmd_;
  const GenerateSetup& setup_;
  const ConfinedDir* data_;  // null for s3
  const int rank_;
  std::atomic<bool>& stop_;
  FirstError& first_error_;
  const std::atomic<bool>* cancel_;
  IoStats& stats_;
  std::optional<Pending> pending_;
};

void PhaseRunner::GenerateRank(const PhaseCommand& cmd, const GenerateSetup& setup, int rank, RankEpochResult& r,
                               std::atomic<bool>& stop, FirstError& first_error, const std::atomic<bool>* cancel) {
  r.rank = rank;
  r.epoch = 0;
  r.start_unix_us = NowUnixUs();
  const std::shared_ptr<RankMetrics> rm = metrics_ ? metrics_->Rank(cmd.job_id, rank) : nullptr;
  if (rm) rm->SetPhase(RankPhase::kGenerate);
  // This rank's files: i = rank, rank + world, ... in each split.
  std::vector<std::pair<const GenerateSplit*, int64_t>> todo;
  for (const GenerateSplit& sp : setup.splits) {
    for (int64_t i = rank; i < sp.files; i += cmd.world) todo.emplace_back(&sp, i);
  }
  std::vector<IoStats> worker_stats(static_cast<size_t>(setup.workers));
  auto work = [&](size_t w) {
    FileWriter(*this, cmd, setup, rank, stop, first_error, cancel, worker_stats[w]).Run(todo, w);
  };
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

absl::StatusOr<std::vector<RankEpochResult>> PhaseRunner::Generate(const PhaseCommand& cmd,
                                                                   const std::atomic<bool>* cancel) {
  absl::StatusOr<std::unique_ptr<GenerateSetup>> setup = SetUpGenerate(cmd);
  if (!setup.ok()) return setup.status();
  int64_t mine = 0;
  for (const GenerateSplit& sp : (*setup)->splits) {
    for (int64_t i = 0; i < sp.files; ++i) mine += OwnedHere(cmd, i) ? 1 : 0;
  }
  progress_.total = mine;
  std::vector<RankEpochResult> results(cmd.local_ranks);
  FirstError first_error;
  std::atomic<bool> stop{false};
  ForEachLocalRank(cmd, [&](int l, int rank) {
    GenerateRank(cmd, **setup, rank, results[static_cast<size_t>(l)], stop, first_error, cancel);
  });
  if (absl::Status s = first_error.Get(); !s.ok()) return s;
  if (cancel && *cancel) return absl::CancelledError(absl::StrCat(Where(cmd, cmd.first_rank), ": cancelled"));
  return results;
}

// What every rank of a training epoch or an evaluation shares, made once per phase by SetUpSteps.
struct PhaseRunner::StepsSetup {
  bool eval = false;
  EpochPlan plan;                                // the epoch's samples per rank; its batch is the loader's
  std::shared_ptr<const ConfinedDir> data_dir;   // POSIX: the data folder; null for s3
  std::unique_ptr<Format> format;
  std::vector<int64_t> ckpt_steps;               // step-based checkpoints of this epoch (none for evaluations)
  std::unique_ptr<CheckpointSetup> ckpt;         // set when ckpt_steps is not empty
  std::unique_ptr<BandwidthLimiter> ckpt_limiter;  // dlio_ext.checkpoint_bandwidth_limit, for step checkpoints
  std::unique_ptr<BandwidthLimiter> limiter;     // dlio_ext.read_bandwidth_limit: shared by the agent's ranks
  LoaderConfig cfg;                              // per rank, its pool and trace buffers are added
};

namespace {

// The phase's data folder inside the data root (POSIX), or null for s3; a missing folder says how to make it.
absl::StatusOr<std::shared_ptr<const ConfinedDir>> ExistingDataDir(
    const WorkloadSpec& spec, const absl::StatusOr<std::shared_ptr<const ConfinedDir>>& root, bool objects,
    const std::string& hint) {
  if (objects) return std::shared_ptr<const ConfinedDir>();
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> d =
      root.ok() ? (*root)->Sub(spec.data_folder, ConfinedDir::Mode::kExisting, "dataset.data_folder")
                : absl::StatusOr<std::shared_ptr<const ConfinedDir>>(root.status());
  if (!d.ok() && d.status().code() == absl::StatusCode::kNotFound) {
    return absl::NotFoundError(
        absl::StrCat(d.status().message(), " (generate the dataset with workflow.generate_data: true)", hint));
  }
  return d;
}

// The files of the phase's split: DLIO's file discovery, a directory listing or ListObjectsV2 over the bucket.
absl::StatusOr<std::vector<std::string>> PhaseFiles(const WorkloadSpec& spec, bool eval, const ConfinedDir* data_dir,
                                                    const std::shared_ptr<const S3Config>& s3, const Format& format,
                                                    const std::string& hint) {
  const char* split = eval ? "valid" : "train";
  const int64_t count = eval ? spec.num_files_eval : spec.num_files_train;
  const char* key = eval ? "dataset.num_files_eval" : "dataset.num_files_train";
  if (s3) return ListDataObjects(s3, spec.S3DataPrefix(), split, format.extension(), count, key);
  return ListDataFiles(*data_dir, split, format.extension(), count, key, hint);
}

// Cache hygiene: drops the page cache of the files this agent's ranks read this epoch.
absl::Status EvictEpochFiles(const PhaseCommand& cmd, const EpochPlan& plan, const ConfinedDir& data_dir,
                             const std::vector<std::string>& files) {
  std::vector<char> mine(files.size(), 0);
  for (int rank = cmd.first_rank; rank < cmd.first_rank + cmd.local_ranks; ++rank) {
    if (AccessModeFor(cmd.spec) == AccessMode::kStream) {
      for (const ThreadStream& ts : plan.RankStream(rank).threads) {
        for (uint32_t f : ts.files) mine[f] = 1;
      }
    } else {
      for (const SampleRef& s : plan.RankSamples(rank)) mine[s.file] = 1;
    }
  }
  std::vector<std::string> evict;
  for (size_t f = 0; f < mine.size(); ++f) {
    if (mine[f]) evict.push_back(files[f]);
  }
  return EvictFiles(data_dir, evict);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PhaseRunner::StepsSetup>> PhaseRunner::SetUpSteps(const PhaseCommand& cmd,
                                                                                const std::atomic<bool>* cancel) {
  const WorkloadSpec& spec = cmd.spec;
  auto setup = std::make_unique<StepsSetup>();
  setup->eval = cmd.kind == PhaseKind::kEval;
  const bool eval = setup->eval;
  absl::StatusOr<EpochPlan> plan =
      EpochPlan::Make(eval ? EvalPlanParams(spec, cmd.world) : TrainPlanParams(spec, cmd.world), cmd.epoch);
  if (!plan.ok()) return Annotate(plan.status(), Where(cmd, cmd.first_rank));
  setup->plan = std::move(*plan);
  absl::StatusOr<std::shared_ptr<const S3Config>> s3 = S3For(cmd);
  if (!s3.ok()) return s3.status();
  // Agents of one job read one dataset: without a shared data folder each agent finds only the share it generated.
  const std::string hint =
      cmd.world > cmd.local_ranks
          ? "; with several agents every agent must see the whole dataset: give them one shared data folder (a "
            "parallel file system or NFS mounted below each --data-root), see docs/fleet.md"
          : "";
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> data_dir = ExistingDataDir(spec, root_, *s3 != nullptr, hint);
  if (!data_dir.ok()) return Annotate(data_dir.status(), Where(cmd, cmd.first_rank));
  setup->data_dir = std::move(*data_dir);
  absl::StatusOr<std::unique_ptr<Format>> format =
      MakeFormat(spec.format, FormatOptionsFor(spec, setup->data_dir, eval ? "valid" : "train", *s3));
  if (!format.ok()) return format.status();
  setup->format = std::move(*format);
  absl::StatusOr<std::vector<std::string>> files =
      PhaseFiles(spec, eval, setup->data_dir.get(), *s3, *setup->format, hint);
  if (!files.ok()) return Annotate(files.status(), Where(cmd, cmd.first_rank));
  if (!eval) setup->ckpt_steps = CheckpointStepsInEpoch(spec, setup->plan.steps());
  if (!setup->ckpt_steps.empty()) {
    absl::StatusOr<CheckpointSetup> c = MakeCheckpointSetup(spec, cmd.world, root_, *s3);
    if (!c.ok()) return Annotate(c.status(), Where(cmd, cmd.first_rank));
    setup->ckpt = std::make_unique<CheckpointSetup>(std::move(*c));
  }
  LoaderConfig& cfg = setup->cfg;
  cfg.format = setup->format.get();
  cfg.files = std::move(*files);
  cfg.batch = setup->plan.params().batch;  // one batch size: the plan's (batch_size, or batch_size_eval)
  cfg.threads = spec.read_threads;
  cfg.prefetch = spec.prefetch_size;
  cfg.preprocess = spec.preprocess_time;
  cfg.seed = static_cast<uint64_t>(spec.seed) ^ (static_cast<uint64_t>(cmd.epoch) << 32);
  cfg.cancel = cancel;
  setup->ckpt_limiter = CheckpointLimiter(spec);
  if (spec.read_bandwidth_limit > 0) {  // one limiter for every rank of this agent, living as long as this phase
    BandwidthLimiter::Options lo;
    lo.bytes_per_second = static_cast<double>(spec.read_bandwidth_limit);
    setup->limiter = std::make_unique<BandwidthLimiter>(lo);
    cfg.limiter = setup->limiter.get();
  }
  if (!eval && (spec.evict_cache == "every_epoch" || (spec.evict_cache == "before_training" && cmd.epoch == 1))) {
    if (absl::Status s = EvictEpochFiles(cmd, setup->plan, *setup->data_dir, cfg.files); !s.ok()) {
      return Annotate(s, Where(cmd, cmd.first_rank));
    }
  }
  return setup;
}

void PhaseRunner::PrepareLoaderThreads(const PhaseCommand& cmd) {
  const WorkloadSpec& spec = cmd.spec;
  // The job's loader threads, made at its first epoch and reused by the next ones.
  const int loader_threads = static_cast<int>(std::max<int64_t>(1, spec.read_threads));
  if (pools_job_ != cmd.job_id || pools_.size() != static_cast<size_t>(cmd.local_ranks) ||
      pools_[0]->size() != loader_threads) {
    pools_.clear();
    for (int l = 0; l < cmd.local_ranks; ++l) pools_.push_back(std::make_unique<WorkerPool>(loader_threads));
    pools_job_ = cmd.job_id;
  }
  if (!spec.trace) return;
  // Tracing: one buffer per rank's step thread and per loader thread, kept from phase to phase.
  const size_t per_rank = 1 + static_cast<size_t>(loader_threads);
  if (trace_.size() != static_cast<size_t>(cmd.local_ranks) || trace_[0].size() != per_rank ||
      trace_capacity_ != spec.trace_events_per_thread) {
    trace_.clear();
    trace_capacity_ = spec.trace_events_per_thread;
    for (int l = 0; l < cmd.local_ranks; ++l) {
      std::vector<std::unique_ptr<TraceBuffer>> v;
      for (size_t k = 0; k < per_rank; ++k) v.push_back(std::make_unique<TraceBuffer>(0, trace_capacity_));
      trace_.push_back(std::move(v));
    }
  }
  for (int l = 0; l < cmd.local_ranks; ++l) {
    const int rank = cmd.first_rank + l;
    for (size_t k = 0; k < trace_[l].size(); ++k) {
      trace_[l][k]->Clear();
      trace_[l][k]->set_tid(k == 0 ? StepTrackId(rank) : LoaderTrackId(rank, static_cast<int>(k - 1)));
    }
  }
}

// One rank's step loop of a training epoch or an evaluation:
//   wait for a batch (load) -> sleep the compute time -> step barrier (training) -> record the step,
// with the epoch's step-based checkpoints between blocks. The ranks of the phase share `group`.
class PhaseRunner::RankSteps {
 public:
  // What the phase's ranks share while they run.
  struct Group {
    std::atomic<bool> stop{false};
    FirstError first_error;
    StepBarrier barrier;
    std::vector<std::atomic<uint64_t>> rank_steps;  // steps done per local rank
    Group(const PhaseCommand& cmd, const BarrierFn& global)
        // When every rank of the job is on this agent, the local barrier is the whole barrier: no round trip to
        // the coordinator per step (it knows, and does not expect arrivals from a single-agent job).
        : barrier(cmd.local_ranks, cmd.local_ranks == cmd.world ? StepBarrier::Global() : global),
          rank_steps(static_cast<size_t>(cmd.local_ranks)) {}
  };

  RankSteps(PhaseRunner& runner, const PhaseCommand& cmd, const StepsSetup& setup, Group& group, int local,
            const std::atomic<bool>* cancel, RankEpochResult& r)
      : runner_(runner), cmd_(cmd), spec_(cmd.spec), setup_(setup), group_(group), local_(local),
        rank_(cmd.first_rank + local), cancel_(cancel), r_(r),
        rm_(runner.metrics_ ? runner.metrics_->Rank(cmd.job_id, rank_) : nullptr),
        // Per rank and epoch: reproducible compute draws that differ between ranks and epochs.
        compute_rng_(static_cast<uint64_t>(spec_.seed) * 0x9E3779B97F4A7C15ull ^
                     (static_cast<uint64_t>(rank_) << 20) ^ static_cast<uint64_t>(cmd.epoch) ^
                     (setup.eval ? 0x5bd1e995ull << 32 : 0)) {}

  void Run() {
    Start();
    const int64_t steps = setup_.plan.steps();
    for (int64_t step = 0; step < steps; ++step) {
      if (!Step(step)) break;
      if (next_ckpt_ < setup_.ckpt_steps.size() && setup_.ckpt_steps[next_ckpt_] == step + 1 && !Checkpoint(step)) {
        break;
      }
    }
    Finish();
  }

 private:
  void Fail(const absl::Status& s) {
    group_.first_error.Set(s.code() == absl::StatusCode::kCancelled ? s : Annotate(s, runner_.Where(cmd_, rank_)));
    group_.stop = true;
    group_.barrier.Cancel(absl::CancelledError(absl::StrCat(runner_.Where(cmd_, rank_), ": another rank failed")));
  }
  absl::Status Cancelled(const char* where, int64_t step) const {
    return absl::CancelledError(absl::StrCat(runner_.Where(cmd_, rank_), ": cancelled", where, step));
  }
  bool CancelAsked() const { return cancel_ && *cancel_; }

  // The rank's loader, metrics and first block.
  void Start() {
    const int64_t steps = setup_.plan.steps();
    r_.rank = rank_;
    r_.epoch = cmd_.epoch;
    r_.dropped_samples = rank_ == 0 && !setup_.eval ? static_cast<uint64_t>(setup_.plan.DroppedSamples()) : 0;
    LoaderConfig cfg = setup_.cfg;
    cfg.pool = runner_.pools_[static_cast<size_t>(local_)].get();
    if (spec_.trace) {
      step_trace_ = runner_.trace_[local_][0].get();
      for (size_t k = 1; k < runner_.trace_[local_].size(); ++k) cfg.trace.push_back(runner_.trace_[local_][k].get());
    }
    block_.block = 1;
    block_.load.reserve(steps);
    block_.proc.reserve(steps);
    block_.compute.reserve(steps);
    block_.barrier.reserve(steps);
    // The epoch starts before the loader does (as a torch DataLoader's iteration starts its workers' epoch): its
    // start-up and first reads belong to the first step's load time, not to the time before the epoch.
    r_.start_unix_us = block_.start_unix_us = NowUnixUs();
    block_start_ = window_start_ = prev_step_end_ = SteadyClock::now();
    loader_ = AccessModeFor(spec_) == AccessMode::kStream
                  ? Loader::StartStream(cfg, setup_.plan.RankStream(rank_), steps, &group_.stop)
                  : Loader::StartIndex(cfg, setup_.plan.RankSamples(rank_), steps, &group_.stop);
    if (rm_) {
      rm_->AttachLoader(loader_.get(), setup_.eval);
      rm_->epoch = cmd_.epoch;
      rm_->au_target_ratio = spec_.au_threshold;
      rm_->demand_bytes_per_second = DemandBytesPerSecondPerAccelerator(spec_).value_or(0);
      rm_->SetPhase(setup_.eval ? RankPhase::kEval : RankPhase::kTrain);
    }
    if (setup_.ckpt) {
      ckpt_io_ = std::make_unique<Checkpointer>(setup_.ckpt->folder, spec_.checkpoint_fsync,
                                                CheckpointSeed(spec_, rank_), Checkpointer::kDefaultBufferBytes,
                                                setup_.ckpt->s3, setup_.ckpt->s3_prefix);
      ckpt_io_->set_limiter(setup_.ckpt_limiter.get());
    }
  }

  // Load, compute and (training) the step barrier of one step, then its records; false when the rank stops.
  bool Step(int64_t step) {
    if (group_.stop || CancelAsked()) {
      Fail(Cancelled(" at step ", step));
      return false;
    }
    const auto t0 = SteadyClock::now();
    if (absl::Status s = loader_->Next(); !s.ok()) {
      Fail(s.code() == absl::StatusCode::kCancelled && CancelAsked() ? Cancelled(" at step ", step) : s);
      return false;
    }
    const auto t1 = SteadyClock::now();
    const Distribution& compute = setup_.eval ? spec_.eval_time : spec_.computation_time;
    if (!compute.IsZero() && !SleepFor(compute.Sample(compute_rng_), cancel_)) {
      Fail(Cancelled(" in the compute of step ", step));
      return false;
    }
    const auto t2 = SteadyClock::now();
    // DLIO's evaluation has no per-step barrier.
    if (absl::Status s = setup_.eval ? absl::OkStatus() : group_.barrier.Arrive(barrier_seq_++); !s.ok()) {
      Fail(s);
      return false;
    }
    Record(step, t0, t1, t2, SteadyClock::now());
    return true;
  }

  // The step's times: trace events, the block's timings, the live AU, the rank's metrics and the phase's progress.
  void Record(int64_t step, SteadyClock::time_point t0, SteadyClock::time_point t1, SteadyClock::time_point t2,
              SteadyClock::time_point t3) {
    if (step_trace_ != nullptr) {
      auto ns = [](SteadyClock::time_point t) { return static_cast<int64_t>(Nanos(t.time_since_epoch())); };
      // steady_clock is CLOCK_MONOTONIC on Linux, the TraceBuffer's clock.
      step_trace_->Record(TraceKind::kWait, ns(t0), static_cast<uint64_t>(ns(t1) - ns(t0)), 0);
      step_trace_->Record(TraceKind::kCompute, ns(t1), static_cast<uint64_t>(ns(t2) - ns(t1)), 0);
      if (!setup_.eval) step_trace_->Record(TraceKind::kBarrier, ns(t2), static_cast<uint64_t>(ns(t3) - ns(t2)), 0);
    }
    block_.load.push_back(Seconds(t1 - t0));
    block_.compute.push_back(Seconds(t2 - t1));
    block_.proc.push_back(Seconds(t2 - t0));
    block_.barrier.push_back(Seconds(t3 - t2));
    group_.rank_steps[static_cast<size_t>(local_)] = step + 1;
    PhaseProgress& progress = runner_.progress_;
    // Live AU for the gauge: compute over wall time after the first (excluded) step.
    if (setup_.eval) {
    } else if (step == 0) {
      window_start_ = t3;
    } else {
      window_compute_ += Seconds(t2 - t1);
      const double wall = Seconds(t3 - window_start_);
      if (rm_ && wall > 0) rm_->au_ratio = window_compute_ / wall;
      // The fleet's live AU (Progress): this step's compute and wall time, from the previous step's end.
      progress.compute_ns.fetch_add(static_cast<uint64_t>(Nanos(t2 - t1)), std::memory_order_relaxed);
      progress.wall_ns.fetch_add(static_cast<uint64_t>(Nanos(t3 - prev_step_end_)), std::memory_order_relaxed);
    }
    prev_step_end_ = t3;
    if (rm_) {
      // Per-rank histograms, one short lock per step; the scrape reads copies (never a Prometheus call here).
      rm_->RecordStep(static_cast<uint64_t>(Nanos(t1 - t0)), static_cast<uint64_t>(Nanos(t3 - t0)),
                      static_cast<uint64_t>(Nanos(t3 - t2)));
      if (!setup_.eval) {
        rm_->steps += 1;
        rm_->last_step_unix_ms = NowUnixUs() / 1000;
      }
    }
    progress.samples += static_cast<uint64_t>(setup_.cfg.batch);  // the batch the loader delivered
    uint64_t slowest = group_.rank_steps[0];
    for (auto& s : group_.rank_steps) slowest = std::min<uint64_t>(slowest, s);
    progress.done = slowest;
  }

  // A step-based checkpoint after `step`: the block ends here, the checkpoint runs outside it, the next block starts
  // after it (DLIO's end_block / start_save_ckpt / start_block). False when it failed.
  bool Checkpoint(int64_t step) {
    block_.duration_s = Seconds(SteadyClock::now() - block_start_);
    block_.end_unix_us = NowUnixUs();
    const int number = block_.block;
    r_.blocks.push_back(std::move(block_));
    block_ = BlockTimings();
    block_.block = number + 1;
    if (rm_) rm_->SetPhase(RankPhase::kCheckpoint);
    const int64_t ck0 = step_trace_ != nullptr ? TraceNowNs() : 0;
    absl::StatusOr<RankCheckpointResult> c = TakeCheckpoint(
        spec_, *setup_.ckpt, *ckpt_io_, rank_, cmd_.world, cmd_.local_ranks, false,
        cmd_.checkpoint_index + static_cast<int>(next_ckpt_), cmd_.epoch, step + 1,
        [&] { return group_.barrier.Arrive(barrier_seq_++); }, rm_.get());
    if (rm_) rm_->SetPhase(RankPhase::kTrain);
    if (!c.ok()) {
      Fail(c.status());
      return false;
    }
    if (step_trace_ != nullptr) {  // one event per rank and save, its bytes the rank's files
      step_trace_->Record(TraceKind::kCheckpointWrite, ck0, static_cast<uint64_t>(TraceNowNs() - ck0), c->bytes);
    }
    r_.checkpoints.push_back(*c);
    ++next_ckpt_;
    block_.start_unix_us = NowUnixUs();
    block_start_ = SteadyClock::now();
    prev_step_end_ = block_start_;  // checkpoint time stays out of the live AU, as out of DLIO's
    window_start_ = block_start_;
    window_compute_ = 0;
    return true;
  }

  // Closes the last block, stops the loader and collects the rank's I/O counters and trace events.
  void Finish() {
    block_.duration_s = Seconds(SteadyClock::now() - block_start_);
    r_.end_unix_us = block_.end_unix_us = NowUnixUs();
    r_.io = loader_->Snapshot();
    if (rm_) {
      rm_->DetachLoader();
      rm_->SetPhase(RankPhase::kIdle);
    }
    loader_.reset();  // joins the loader threads' work: their trace buffers are complete now
    if (spec_.trace) {
      const int64_t offset = TraceClockOffsetNs();
      for (const auto& b : runner_.trace_[local_]) {
        b->Pack(offset, &r_.trace_events);
        r_.trace_dropped += b->dropped();
      }
    }
    // A checkpoint at the epoch's last step leaves an empty block, which DLIO does not record either.
    if (!block_.proc.empty() || r_.blocks.empty()) r_.blocks.push_back(std::move(block_));
  }

  PhaseRunner& runner_;
  const PhaseCommand& cmd_;
  const WorkloadSpec& spec_;
  const StepsSetup& setup_;
  Group& group_;
  const int local_;
  const int rank_;
  const std::atomic<bool>* cancel_;
  RankEpochResult& r_;
  const std::shared_ptr<RankMetrics> rm_;
  Xoshiro256 compute_rng_;
  std::unique_ptr<Loader> loader_;
  TraceBuffer* step_trace_ = nullptr;
  std::unique_ptr<Checkpointer> ckpt_io_;
  BlockTimings block_;
  uint64_t barrier_seq_ = 0;  // every barrier of the phase gets the next number, the same on every rank
  size_t next_ckpt_ = 0;
  SteadyClock::time_point block_start_, window_start_, prev_step_end_;
  double window_compute_ = 0;
};

absl::StatusOr<std::vector<RankEpochResult>> PhaseRunner::Steps(const PhaseCommand& cmd, const BarrierFn& barrier,
                                                                const std::atomic<bool>* cancel) {
  absl::StatusOr<std::unique_ptr<StepsSetup>> setup = SetUpSteps(cmd, cancel);
  if (!setup.ok()) return setup.status();
  progress_.total = (*setup)->plan.steps();
  PrepareLoaderThreads(cmd);
  RankSteps::Group group(cmd, barrier);
  std::vector<RankEpochResult> results(cmd.local_ranks);
  ForEachLocalRank(cmd, [&](int l, int) {
    RankSteps(*this, cmd, **setup, group, l, cancel, results[static_cast<size_t>(l)]).Run();
  });
  if (absl::Status s = group.first_error.Get(); !s.ok()) return s;
  for (const auto& r : results) progress_.bytes += r.io.bytes;
  return results;
}

absl::StatusOr<std::vector<RankEpochResult>> PhaseRunner::CheckpointPhase(const PhaseCommand& cmd,
                                                                          const BarrierFn& barrier,
                                                                          const std::atomic<bool>* cancel) {
  const WorkloadSpec& spec = cmd.spec;
  absl::StatusOr<std::shared_ptr<const S3Config>> s3 = S3For(cmd);
  if (!s3.ok()) return s3.status();
  absl::StatusOr<CheckpointSetup> setup = MakeCheckpointSetup(spec, cmd.world, root_, *s3);
  if (!setup.ok()) return Annotate(setup.status(), Where(cmd, cmd.first_rank));
  progress_.total = 1;
  const std::unique_ptr<BandwidthLimiter> ckpt_limiter = CheckpointLimiter(spec);
  StepBarrier local_barrier(cmd.local_ranks, barrier);
  FirstError first_error;
  std::vector<RankEpochResult> results(cmd.local_ranks);
  ForEachLocalRank(cmd, [&](int l, int rank) {
    RankEpochResult& r = results[static_cast<size_t>(l)];
    r.rank = rank;
    r.epoch = cmd.epoch;
    r.start_unix_us = NowUnixUs();
    const std::shared_ptr<RankMetrics> rm = metrics_ ? metrics_->Rank(cmd.job_id, rank) : nullptr;
    if (rm) rm->SetPhase(RankPhase::kCheckpoint);
    auto fail = [&](const absl::Status& s) {
      first_error.Set(s.code() == absl::StatusCode::kCancelled ? s : Annotate(s, Where(cmd, rank)));
      local_barrier.Cancel(absl::CancelledError(absl::StrCat(Where(cmd, rank), ": another rank failed")));
    };
    // Checkpoint-only mode: DLIO's "compute" between checkpoints; a cancel cuts it short (base/sleep.h).
    if (!spec.train && spec.time_between_checkpoints > 0) SleepFor(spec.time_between_checkpoints, cancel);
    uint64_t barrier_seq = 0;
    absl::Status s = cancel && *cancel ? absl::CancelledError(absl::StrCat(Where(cmd, rank), ": cancelled"))
                                       : local_barrier.Arrive(barrier_seq++);
    if (s.ok()) {
      Checkpointer io(setup->folder, spec.checkpoint_fsync, CheckpointSeed(spec, rank),
                      Checkpointer::kDefaultBufferBytes, setup->s3, setup->s3_prefix);
      io.set_limiter(ckpt_limiter.get());
      const int64_t ck0 = TraceNowNs();
      absl::StatusOr<RankCheckpointResult> c =
          TakeCheckpoint(spec, *setup, io, rank, cmd.world, cmd.local_ranks, cmd.checkpoint_load,
                         cmd.checkpoint_index, cmd.epoch, cmd.checkpoint_step,
                         [&] { return local_barrier.Arrive(barrier_seq++); }, rm.get());
      if (c.ok() && spec.trace) {
        // --trace: the save or load as one event on the rank's step track (its bytes the rank's files).
        const std::unique_ptr<TraceBuffer> t = TraceBuffer::Make(StepTrackId(rank), 1);
        t->Record(c->load ? TraceKind::kCheckpointRead : TraceKind::kCheckpointWrite, ck0,
                  static_cast<uint64_t>(TraceNowNs() - ck0), c->bytes);
        t->Pack(TraceClockOffsetNs(), &r.trace_events);
      }
      if (c.ok()) {
        r.checkpoints.push_back(*c);
        progress_.bytes += c->bytes;
      } else {
        s = c.status();
      }
    }
    if (!s.ok()) fail(s);
    r.end_unix_us = NowUnixUs();
    if (rm) rm->SetPhase(RankPhase::kIdle);
  });
  if (absl::Status s = first_error.Get(); !s.ok()) return s;
  if (cancel && *cancel) return absl::CancelledError(absl::StrCat(Where(cmd, cmd.first_rank), ": cancelled"));
  progress_.done = 1;
  return results;
}

}  // namespace dlio
