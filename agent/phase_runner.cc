#include "agent/phase_runner.h"

#include "agent/checkpoint_phase.h"
#include "agent/dataset_files.h"
#include "agent/generate_phase.h"
#include "agent/phase_context.h"
#include "agent/split_listing.h"
#include "agent/steps_phase.h"
#include "readers/format.h"
#include "results/host_facts_json.h"
#include "results/s3_stats.h"
#include "storage/storage.h"

namespace dlio {

absl::StatusOr<std::shared_ptr<const S3Config>> PhaseRunner::S3For(const PhaseContext& ctx) {
  const PhaseCommand& cmd = ctx.cmd;
  if (!cmd.spec.IsS3()) return std::shared_ptr<const S3Config>();
  if (s3_config_ && s3_job_ == cmd.job_id) return s3_config_;
  absl::StatusOr<std::shared_ptr<const S3Config>> c = S3ConfigFor(cmd.spec, s3_defaults_, cmd.agent_index);
  if (!c.ok()) return Annotate(c.status(), ctx.Where(cmd.first_rank));
  // The job's first phase here: the bucket and credentials, and (when the data should be there) the first object.
  std::string first;
  if (cmd.kind == PhaseKind::kTrainEpoch || cmd.kind == PhaseKind::kEval) {
    const bool eval = cmd.kind == PhaseKind::kEval;
    absl::StatusOr<std::unique_ptr<Format>> f =
        MakeFormat(cmd.spec.format, FormatOptionsFor(cmd.spec, {}, eval ? "valid" : "train", *c));
    const int64_t count = eval ? cmd.spec.num_files_eval : cmd.spec.num_files_train;
    const SplitListing* shared = SharedListingOf(cmd, eval ? "valid" : "train");
    if (f.ok() && shared != nullptr) {
      // The job's listing (agent/split_listing.h): its first name, no LIST of this agent's own.
      absl::StatusOr<DataFileNames> names = ListingNames(*shared, DatasetLocation::Bucket(*c, cmd.spec.S3DataPrefix()),
                                                         count, "dataset.num_files_train");
      if (names.ok() && !names->empty()) first = (*names)[0];
    } else if (f.ok() && cmd.spec.SkipsListing(count)) {
      // No listing. skip_listing set: the first name as generation gives it; unset (by size): none here, the phase
      // checks that name and lists instead when it is missing (agent/dataset_files.h's FindDataFiles).
      if (cmd.spec.skip_listing == 1) {
        first = S3Join(cmd.spec.S3DataPrefix(),
                       DataFileRelPath(eval ? "valid" : "train", cmd.spec.file_prefix, 0, count,
                                       eval ? cmd.spec.num_subfolders_eval : cmd.spec.num_subfolders_train,
                                       (*f)->extension()));
      }
    } else if (f.ok()) {
      absl::StatusOr<std::vector<std::string>> keys =
          ListDataFiles(DatasetLocation::Bucket(*c, cmd.spec.S3DataPrefix()), eval ? "valid" : "train",
                        (*f)->extension(), 1, eval ? "dataset.num_files_eval" : "dataset.num_files_train");
      if (keys.ok()) first = (*keys)[0];
    }
  }
  if (absl::Status s = S3Preflight(*c, first); !s.ok()) return Annotate(s, ctx.Where(cmd.first_rank));
  s3_job_ = cmd.job_id;
  s3_config_ = *c;
  return s3_config_;
}

std::string PhaseRunner::HostFactsWire(const std::string& start) {
  nlohmann::json wire = nlohmann::json::object();
  if (!start.empty()) {
    wire["start"] = nlohmann::json::parse(start);
    facts_sent_ = start;
  }
  const nlohmann::json end = RunHostFactsJson(CollectRunHostFacts(data_root_));
  std::string text = end.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // any bytes in the env
  if (text != facts_sent_) {  // unchanged since the facts sent last: the coordinator has them
    wire["end"] = end;
    facts_sent_ = std::move(text);
  }
  return wire.empty() ? std::string() : wire.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::StatusOr<std::vector<RankEpochResult>> PhaseRunner::Run(const PhaseCommand& cmd, const BarrierFn& barrier,
                                                              const std::atomic<bool>* cancel,
                                                              const AnnounceFns* announce) {
  progress_.done = 0;
  progress_.total = 0;
  progress_.samples = 0;
  progress_.bytes = 0;
  progress_.compute_ns = 0;
  progress_.wall_ns = 0;
  PhaseContext ctx{cmd, barrier, cancel, agent_, root_, metrics_, progress_, nullptr, announce};
  ctx.s3 = [this, &ctx] { return S3For(ctx); };
  // Object storage: the phase's S3 requests are the process-wide total's growth (one phase runs at a time).
  const S3Snapshot s3_before = cmd.spec.IsS3() ? S3Metrics::Global().Snapshot() : S3Snapshot();
  // Host facts: the job's start is this agent's host before its first phase of the job.
  const std::string facts_start =
      facts_sent_.empty() ? RunHostFactsJson(CollectRunHostFacts(data_root_))
                                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                          : "";
  absl::StatusOr<std::vector<RankEpochResult>> r = cmd.kind == PhaseKind::kGenerate     ? RunGenerate(ctx)
                                                   : cmd.kind == PhaseKind::kCheckpoint ? RunCheckpoint(ctx)
                                                   : cmd.kind == PhaseKind::kList       ? RunListPhase(ctx)
                                                                                        : RunSteps(ctx, loader_threads_);
  if (r.ok() && !r->empty() && cmd.spec.IsS3()) {
    (*r)[0].s3 = S3Difference(S3Metrics::Global().Snapshot(), s3_before);
  }
  if (r.ok() && !r->empty()) (*r)[0].host_facts = HostFactsWire(facts_start);
  // Read buffers are pooled from epoch to epoch (storage/storage.h); after the job's last phase (or a failure, which
  // ends the job) an idle agent keeps none.
  const bool last = cmd.kind == PhaseKind::kGenerate ? !cmd.spec.train : cmd.epoch >= cmd.spec.epochs;
  if (last || !r.ok()) {
    TrimBufferPool();
    loader_threads_.Clear();
  }
  return r;
}

}  // namespace dlio
