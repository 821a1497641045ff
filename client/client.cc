#include "client/client.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/text.h"
#include "client/baseline.h"
#include "client/workload_lookup.h"
#include "coordinator/coordinator.h"
#include "nlohmann/json.hpp"

namespace dlio {

using SteadyClock = std::chrono::steady_clock;

namespace {

namespace fs = std::filesystem;

// The names of the files a job's result folder holds, which the client writes into the output folder
// (results/results.h WriteResultFiles, the coordinator's trace.json).
bool IsResultFileName(const std::string& name) {
  if (name == "job.yaml" || name == "summary.json" || name == "trace.json") return true;
  for (const char* tail : {"_output.json", "_per_epoch_stats.json", "_host.jsonl"}) {
    if (absl::EndsWith(name, tail) && name.size() > std::strlen(tail)) return true;  // <rank><tail>, <agent><tail>
  }
  return false;
}

// Issue 24 item 7: `output.folder: .` made `run` replace the user's job.yaml by the normalised job.yaml of the
// results. The output folder (--output, else output.folder) and --trace may not be where the job file is: the job
// file as given (a link there is replaced, not followed) and the file it resolves to are both compared by identity
// with where the result of that name would go. That place is resolved as the fetch will: the existing part of the
// path through the file system, the rest (folders the fetch creates, "sub/..") lexically.
absl::Status CheckJobFileIsSpared(const SubmitOptions& opt, const LoadedJob& job) {
  const bool flag = !opt.output_dir.empty();
  const std::string output = flag ? opt.output_dir : job.spec().output_folder;
  const fs::path given(job.path());
  std::error_code ec;
  const fs::path resolved = fs::canonical(given, ec);
  for (const fs::path& p : {given, resolved}) {
    const std::string name = p.filename().string();
    if (output.empty() || p.empty() || !IsResultFileName(name)) continue;
    const fs::path target = fs::weakly_canonical(fs::path(output) / name, ec);
    if (ec || !fs::equivalent(target, p, ec)) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        flag ? "--output" : "output.folder", ": '", EscapeText(output), "' holds the job file '", EscapeText(name),
        "', which the run would replace by the result file of that name (a run writes job.yaml, summary.json, "
        "trace.json, <rank>_output.json, <rank>_per_epoch_stats.json and <agent>_host.jsonl there); choose another "
        "output folder"));
  }
  if (!opt.trace_path.empty() && fs::equivalent(fs::weakly_canonical(opt.trace_path, ec), given, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("--trace: '", EscapeText(opt.trace_path),
                                                   "' is the job file; the trace would replace it; name another file"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadedJob> LoadSubmission(const SubmitOptions& opt, bool plan_only) {
  LoadOptions lo;
  lo.strict = opt.strict;
  lo.plan_only = plan_only;
  // The job argument may be DLIO's workload=NAME or a bare shipped workload's name (client/workload_lookup.h).
  absl::StatusOr<std::string> path = ResolveJobArgument(opt.job_path, ShippedWorkloadFolders());
  if (!path.ok()) return path.status();
  absl::StatusOr<LoadedJob> job = LoadedJob::Load(*path, opt.overrides, lo);
  if (!job.ok()) return job.status();
  if (absl::Status s = CheckPlacementOptions(opt.agents, opt.accelerators_per_agent, opt.wait_for_agents_s,
                                             opt.barrier_timeout_s);
      !s.ok()) {
    return absl::InvalidArgumentError(s.message());
  }
  if (absl::Status s = CheckAgentNames(opt.agent_names, opt.agents); !s.ok()) return s;
  if (absl::Status s = CheckJobFileIsSpared(opt, *job); !s.ok()) return s;
  return job;
}

JobPlacement PlacementOf(const SubmitOptions& opt) {
  return JobPlacement{opt.agents,       opt.accelerators_per_agent, opt.wait_for_agents_s, opt.barrier_timeout_s,
                      opt.agent_names, opt.share_agents};
}

namespace {

// This machine's CPUs online, as an agent on it reports them (agent/agent_server.cc).
int64_t LocalCores() { return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)); }

// The job's agents grouped by node: a node's RAM counts once however many agents share it.
std::vector<ExplainNode> NodesOf(const std::vector<AttachedAgent>& agents, int64_t used) {
  std::vector<ExplainNode> nodes;
  for (int64_t i = 0; i < static_cast<int64_t>(agents.size()) && i < used; ++i) {
    const AttachedAgent& a = agents[static_cast<size_t>(i)];
    if (a.host_memory_bytes == 0) continue;
    auto it = std::find_if(nodes.begin(), nodes.end(), [&](const ExplainNode& n) { return n.name == a.hostname; });
    if (it == nodes.end()) {
      nodes.push_back({a.hostname, a.host_memory_bytes, 1, a.cpu_count});
    } else {
      it->agents += 1;
    }
  }
  return nodes;
}

// The attached agents, if the coordinator answers soon; explaining must not hang on an absent coordinator.
std::optional<JobList> QuickList(const ClientOptions& opt) {
  ClientOptions quick = opt;
  quick.connect_timeout_s = std::min(quick.connect_timeout_s, 2);
  quick.wait_for_coordinator_s = std::min(quick.wait_for_coordinator_s, 2);
  absl::StatusOr<CoordinatorClient> c = CoordinatorClient::Connect(quick);
  if (!c.ok()) return std::nullopt;
  absl::StatusOr<JobList> list = c->List(/*limit=*/1, std::chrono::seconds(2));  // for its agents
  if (!list.ok()) return std::nullopt;
  return *std::move(list);
}

// The fleet of `submit`: the attached agents, else the flags and this machine's memory.
ExplainFleet AttachedFleet(const SubmitOptions& opt, uint64_t local_ram) {
  ExplainFleet fleet;
  std::optional<JobList> list = QuickList(opt.client);
  // --wait-for-agents: the job would wait for its agents, so the sizing waits for them too (the datasize of an
  // MLPerf datagen comes from their memory: sized before they attach, it would be this machine's).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::max(0, opt.wait_for_agents_s));
  while (list.has_value() && static_cast<int>(list->agents.size()) < std::max(1, opt.agents) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (std::optional<JobList> again = QuickList(opt.client); again.has_value()) list = std::move(again);
  }
  const bool listed = list.has_value();
  const int attached = listed ? static_cast<int>(list->agents.size()) : 0;
  fleet.agents = opt.agents > 0 ? opt.agents : std::max(1, attached);
  fleet.accelerators_per_agent = opt.accelerators_per_agent > 0 ? opt.accelerators_per_agent
                                 : attached > 0                ? list->agents[0].accelerators
                                                               : 1;
  const std::vector<ExplainNode> nodes = listed ? NodesOf(list->agents, fleet.agents) : std::vector<ExplainNode>();
  if (!nodes.empty()) {
    fleet.nodes = nodes;
    fleet.memory_source = "attached agents, as the coordinator reports them";
  } else {
    // Unknown placement: every agent on a node like this one.
    if (local_ram > 0) {
      for (int64_t i = 0; i < fleet.agents; ++i) fleet.nodes.push_back({"node", local_ram, 1, LocalCores()});
    }
    fleet.memory_source = listed ? "local /proc/meminfo: the coordinator reported no agent memory"
                                 : "local /proc/meminfo: the coordinator at " + opt.client.coordinator +
                                       " did not answer within 2 s";
  }
  if (!listed) {
    fleet.fleet_note = absl::StrCat("coordinator not reached; world from --agents/--accelerators-per-agent (0 = 1)");
  } else if (attached == 0 && (opt.agents == 0 || opt.accelerators_per_agent == 0)) {
    fleet.fleet_note = "no agent attached; 0 in --agents/--accelerators-per-agent taken as 1";
  }
  return fleet;
}

}  // namespace

ExplainFleet DescribeFleet(const SubmitOptions& opt, const LocalFleetShape* local) {
  const uint64_t local_ram = LocalMemoryBytes();
  if (local == nullptr) return AttachedFleet(opt, local_ram);
  ExplainFleet fleet;
  fleet.agents = local->agents;
  fleet.accelerators_per_agent = local->accelerators;
  // `run`'s agents share this one machine: its RAM counts once.
  const uint64_t ram = local->host_memory_bytes > 0 ? local->host_memory_bytes : local_ram;
  if (ram > 0) fleet.nodes = {{"localhost", ram, local->agents, LocalCores()}};
  fleet.memory_source = local->host_memory_bytes > 0 ? "--host-memory" : "local /proc/meminfo";
  return fleet;
}

int ExplainJobPlan(const SubmitOptions& opt, const LoadedJob& job, const LocalFleetShape* local, std::ostream& out) {
  const ExplainFleet fleet = DescribeFleet(opt, local);
  const nlohmann::json plan = dlio::ExplainJob(job.spec(), job.diagnostics(), fleet, job.path());
  if (opt.client.json) {
    out << plan.dump(2) << "\n";
  } else {
    out << ExplainText(plan);
  }
  return plan["runnable"].get<bool>() ? kExitOk : kExitBadInput;
}

absl::Status CheckPreRun(const LoadedJob& job, const JobWorld& world) {
  std::vector<std::string> lines = PreRunRefusals(job.spec(), world);
  if (lines.empty()) return absl::OkStatus();
  lines.push_back(
      absl::StrCat("refused before anything ran, on ", DescribeWorld(world), " (--explain shows the plan)"));
  return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
}

int SubmitAndWait(const SubmitOptions& opt, const LoadedJob& job, std::ostream& out, std::ostream& err,
                  const std::atomic<bool>* cancel) {
  // With the fleet's shape given, the refusals that depend on it are known here already (the coordinator checks
  // them again once it has placed the job).
  if (opt.agents > 0 && opt.accelerators_per_agent > 0) {
    if (absl::Status s = CheckPreRun(job, JobWorld{opt.agents, opt.accelerators_per_agent}); !s.ok()) {
      return ReportFailure(s, err);
    }
  }
  absl::StatusOr<CoordinatorClient> c = CoordinatorClient::Connect(opt.client);
  if (!c.ok()) return ReportFailure(c.status(), err);
  const bool json_out = opt.client.json;
  if (opt.detach) {
    absl::StatusOr<std::string> id = c->Submit(SubmissionOf(job, PlacementOf(opt), !opt.trace_path.empty()));
    if (!id.ok()) return ReportFailure(id.status(), err);
    RenderDetached(*id, json_out, out);
    return kExitOk;
  }
  SubmitView view(json_out ? nullptr : &out, err, opt.client.coordinator, !json_out && isatty(STDOUT_FILENO));
  RunOptions run;
  run.output_dir = opt.output_dir;
  run.trace_path = opt.trace_path;
  run.cancel = cancel;
  run.observer = &view;
  absl::StatusOr<JobOutcome> outcome = c->Run(job, PlacementOf(opt), run);
  view.Clear();
  if (!outcome.ok()) return ReportFailure(outcome.status(), err);
  // The storage baseline of this dataset, when one exists, cited in the limit line (client/baseline.h).
  const std::string fetched = opt.output_dir.empty() ? job.spec().output_folder : opt.output_dir;
  if (std::optional<nlohmann::json> b = FindBaseline(opt.baseline_file, fetched, job.spec(), err); b) {
    CiteBaseline(*b, job.spec(), outcome->files.count >= 0 ? fetched : "", &*outcome);
  }
  return RenderOutcome(*outcome, opt.where_results_live, json_out, out, err);
}

int ShowStatus(const ClientOptions& opt, const std::string& job_id, std::ostream& out, std::ostream& err) {
  absl::StatusOr<CoordinatorClient> c = CoordinatorClient::Connect(opt);
  if (!c.ok()) return ReportFailure(c.status(), err);
  const absl::StatusOr<JobInfoData> job = c->GetJob(job_id);
  if (!job.ok()) return ReportFailure(job.status(), err);
  return RenderStatus(*job, opt.json, out);
}

int ListJobs(const ClientOptions& opt, size_t limit, std::ostream& out, std::ostream& err) {
  absl::StatusOr<CoordinatorClient> c = CoordinatorClient::Connect(opt);
  if (!c.ok()) return ReportFailure(c.status(), err);
  const absl::StatusOr<JobList> list = c->List(limit);
  if (!list.ok()) return ReportFailure(list.status(), err);
  RenderList(*list, opt.json, out);
  return kExitOk;
}

int CancelJob(const ClientOptions& opt, const std::string& job_id, std::ostream& out, std::ostream& err) {
  absl::StatusOr<CoordinatorClient> c = CoordinatorClient::Connect(opt);
  if (!c.ok()) return ReportFailure(c.status(), err);
  const absl::StatusOr<bool> cancelled = c->Cancel(job_id);
  if (!cancelled.ok()) return ReportFailure(cancelled.status(), err);
  // The coordinator gives the agents 2 s to confirm the stop; 10 s bounds the wait for a busy coordinator.
  const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
  absl::StatusOr<JobInfoData> job;
  while (true) {
    job = c->GetJob(job_id);
    if (!job.ok()) return ReportFailure(job.status(), err);
    if (IsFinal(job->record.state) || SteadyClock::now() > deadline) break;
    // 50 ms: the answer shows the stop promptly without loading the coordinator.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return RenderCancel(job_id, *cancelled, *job, opt.json, out);
}

int FetchResults(const ClientOptions& opt, const std::string& job_id, const std::string& output_dir,
                 std::ostream& out, std::ostream& err) {
  absl::StatusOr<CoordinatorClient> c = CoordinatorClient::Connect(opt);
  if (!c.ok()) return ReportFailure(c.status(), err);
  const absl::StatusOr<JobInfoData> job = c->GetJob(job_id);
  if (!job.ok()) return ReportFailure(job.status(), err);
  std::string summary;
  const absl::StatusOr<std::vector<std::string>> names = c->FetchResults(job_id, output_dir, &summary);
  if (!names.ok()) return ReportFailure(names.status(), err);
  return RenderResults(job_id, *job, *names, summary, output_dir, opt.json, out);
}

}  // namespace dlio
