// Placement of the Coordinator (coordinator.h): where the queue's first job can run now. A job takes --agents agents
// (0: every eligible attached agent) or exactly its --agent-names, each running --accelerators-per-agent ranks (0:
// what the agents offer, the same on all). By default a job holds its agents alone; a --share-agents job runs on
// agents that no exclusive job holds and that still have its accelerators free beside the other sharing jobs. What
// does not fit the attached fleet at all is refused at submit (CheckFleetCanPlace) or, once queued, fails after its
// --wait-for-agents; what fits once running jobs end waits, its reason naming the jobs that hold the agents.
// Also the checks of the placement flags (CheckPlacementOptions, CheckAgentNames). Every member function here runs
// with mu_ held and never blocks.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/text.h"
#include "coordinator/coordinator.h"
#include "coordinator/coordinator_job.h"
#include "coordinator/messages.h"

namespace dlio {

absl::Status CheckPlacementOptions(int64_t agents, int64_t accelerators_per_agent, int64_t wait_for_agents_s,
                                   double barrier_timeout_s) {
  auto range = [](const char* flag, int64_t v, int64_t max) {
    if (v >= 0 && v <= max) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(flag, ": must be an integer in [0, ", max, "], got ", v));
  };
  if (absl::Status s = range("--agents", agents, 65536); !s.ok()) return s;
  if (absl::Status s = range("--accelerators-per-agent", accelerators_per_agent, kMaxAcceleratorsPerAgent); !s.ok()) {
    return s;
  }
  if (absl::Status s = range("--wait-for-agents", wait_for_agents_s, 86400); !s.ok()) return s;
  if (!(barrier_timeout_s >= 0 && barrier_timeout_s <= 604800)) {  // NaN fails both comparisons
    return absl::InvalidArgumentError(
        absl::StrFormat("--barrier-timeout: must be a number of seconds in [0, 604800], got %g", barrier_timeout_s));
  }
  return absl::OkStatus();
}

absl::Status CheckAgentNames(const std::vector<std::string>& names, int64_t agents) {
  std::set<std::string> seen;
  for (const std::string& n : names) {
    if (absl::Status s = CheckText(n, "--agent-names: an agent name", 256); !s.ok()) return s;
    if (n.empty()) return absl::InvalidArgumentError("--agent-names: an empty agent name (give names like a,b)");
    if (!seen.insert(n).second) {
      return absl::InvalidArgumentError(absl::StrCat("--agent-names: '", n, "' is named twice; name each agent once"));
    }
  }
  if (!names.empty() && agents > 0 && static_cast<size_t>(agents) != names.size()) {
    return absl::InvalidArgumentError(absl::StrCat("--agents ", agents, " and --agent-names (", names.size(),
                                                   " name(s)) disagree: give one of them, or the same number"));
  }
  return absl::OkStatus();
}

size_t Coordinator::EligibleAgents(int want_accel) const {
  size_t n = 0;
  for (const auto& [name, a] : agents_) n += want_accel == 0 || a.info.ranks >= want_accel ? 1 : 0;
  return n;
}

std::string Coordinator::UnplacedReason(size_t want_agents, int want_accel, size_t eligible) const {
  std::vector<std::string> offered;
  for (const auto& [name, a] : agents_) offered.push_back(absl::StrCat(name, ": ", a.info.ranks));
  const std::string need =
      want_agents > 0 ? absl::StrCat(want_agents, " agent(s)") : std::string("at least 1 agent");
  const std::string accel = want_accel > 0 ? absl::StrCat(" with at least ", want_accel, " accelerator(s) each")
                                           : std::string();
  const std::string have =
      agents_.empty() ? std::string("none attached")
                      : absl::StrCat(agents_.size(), " attached (accelerators: ", NameList(offered), ")",
                                     want_accel > 0 ? absl::StrCat(", ", eligible, " of them eligible") : "");
  return absl::StrCat("needs ", need, accel, "; ", have);
}

std::string Coordinator::MissingNamedAgents(const std::vector<std::string>& names, int want_accel) const {
  std::vector<std::string> missing;
  for (const std::string& n : names) {
    auto it = agents_.find(n);
    if (it == agents_.end()) {
      missing.push_back(absl::StrCat(n, " not attached"));
    } else if (want_accel > 0 && it->second.info.ranks < want_accel) {
      missing.push_back(absl::StrCat(n, " offers ", it->second.info.ranks, " accelerator(s)"));
    }
  }
  return absl::StrJoin(missing, "; ");
}

absl::Status Coordinator::CheckFleetCanPlace(const JobRequest& request) const {
  // A job that waits for agents, or one submitted while the previous session's agents reattach, may still find
  // its fleet: it queues.
  if (request.wait_for_agents_s > 0 || options_.now() < restart_grace_until_) return absl::OkStatus();
  if (!request.agent_names.empty()) {
    const std::string missing = MissingNamedAgents(request.agent_names, request.accelerators_per_agent);
    if (missing.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "job not queued: the attached fleet cannot place it: --agent-names ", NameList(request.agent_names), ": ",
        missing, " (attach them, or use --wait-for-agents SECONDS to wait for them)"));
  }
  const size_t want_agents = request.agents > 0 ? static_cast<size_t>(request.agents) : 0;
  const size_t eligible = EligibleAgents(request.accelerators_per_agent);
  if (eligible >= std::max<size_t>(1, want_agents)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("job not queued: the attached fleet cannot place it: it ",
                   UnplacedReason(want_agents, request.accelerators_per_agent, eligible),
                   " (attach more agents, lower --agents or --accelerators-per-agent, or use --wait-for-agents "
                   "SECONDS to wait for them)"));
}

void Coordinator::FailUnplaced(Job& job, const std::string& why) {
  const JobRecord& rec = job.rec;
  EndJob(job, JobState::kFailed,
         absl::StrCat("job ", rec.id, " ", why,
                      rec.wait_for_agents_s > 0 ? absl::StrCat(" after waiting ", rec.wait_for_agents_s, " s")
                                                : std::string(" (use --wait-for-agents SECONDS to wait for them)")),
         true);
}

namespace {

// What the running jobs hold of one agent.
struct Hold {
  int accelerators = 0;
  bool exclusive = false;            // a job without --share-agents holds it
  std::vector<std::string> jobs;
};

}  // namespace

Coordinator::Fit Coordinator::AssignRanks(const JobRecord& rec, std::vector<AgentInfo> chosen) {
  Fit fit;
  int per_agent = rec.accelerators_per_agent;
  if (per_agent == 0) {
    per_agent = chosen.front().ranks;
    std::vector<std::string> offered;
    bool same = true;
    for (const AgentInfo& a : chosen) {
      same = same && a.ranks == per_agent;
      offered.push_back(absl::StrCat(a.name, ": ", a.ranks));
    }
    if (!same) {
      fit.kind = Fit::Kind::kFailed;
      fit.why = absl::StrCat("job ", rec.id, ": its agents offer different numbers of accelerators (",
                             NameList(offered),
                             "); every agent must run the same number (MLPerf): pass --accelerators-per-agent N");
      return fit;
    }
  }
  int world = 0;
  for (AgentInfo& info : chosen) {
    info.first_rank = world;
    info.ranks = per_agent;
    world += per_agent;
  }
  fit.kind = Fit::Kind::kPlaced;
  fit.agents = std::move(chosen);
  fit.per_agent = per_agent;
  return fit;
}

Coordinator::Fit Coordinator::TryPlace(const Job& job) const {
  const JobRecord& rec = job.rec;
  const int want_accel = rec.accelerators_per_agent;
  Fit fit;
  // The candidates in rank order: the named agents, else every attached agent that offers enough accelerators.
  std::vector<const Agent*> candidates;
  if (!rec.requested_agents.empty()) {
    if (std::string missing = MissingNamedAgents(rec.requested_agents, want_accel); !missing.empty()) {
      fit.why = absl::StrCat("needs the agents of --agent-names ", NameList(rec.requested_agents), ": ", missing);
      return fit;
    }
    for (const std::string& n : rec.requested_agents) candidates.push_back(&agents_.at(n));
  } else {
    for (const auto& [name, a] : agents_) {
      if (want_accel == 0 || a.info.ranks >= want_accel) candidates.push_back(&a);
    }
  }
  const size_t want = rec.agents > 0 ? static_cast<size_t>(rec.agents) : candidates.size();
  if (candidates.size() < std::max<size_t>(1, want)) {
    fit.why = UnplacedReason(rec.agents > 0 ? want : 0, want_accel, candidates.size());
    return fit;
  }
  std::map<std::string, Hold> holds;
  for (const auto& [id, running] : running_) {
    for (const AgentInfo& a : running->result.agents) {
      Hold& h = holds[a.name];
      h.accelerators += a.ranks;
      h.exclusive = h.exclusive || !running->rec.share_agents;
      h.jobs.push_back(id);
    }
  }
  std::vector<AgentInfo> free;
  std::map<std::string, std::vector<std::string>> held_by;  // job id -> the candidates it holds
  for (const Agent* a : candidates) {
    auto h = holds.find(a->info.name);
    const int need = want_accel > 0 ? want_accel : a->info.ranks;
    if (h == holds.end() ||
        (rec.share_agents && !h->second.exclusive && a->info.ranks - h->second.accelerators >= need)) {
      if (free.size() < want) free.push_back(a->info);
      continue;
    }
    for (const std::string& j : h->second.jobs) held_by[j].push_back(a->info.name);
  }
  if (free.size() >= want) return AssignRanks(rec, std::move(free));
  std::vector<std::string> holders;
  for (const auto& [id, names] : held_by) holders.push_back(absl::StrCat("job ", id, " holds ", NameList(names)));
  fit.kind = Fit::Kind::kBusy;
  fit.why = absl::StrCat("waiting for ", want, " agent(s)", rec.share_agents ? " with free accelerators" : "", ": ",
                         free.size(), " free, ", absl::StrJoin(holders, ", "));
  return fit;
}

}  // namespace dlio
