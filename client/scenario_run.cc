// RunScenario (client/scenario.h): the members' threads, their timing and the scenario folder.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/scenario.h"
#include "client/scenario_trace.h"
#include "results/results.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// How often a waiting member looks at its stop conditions (a signal, its `until` member ending), and how often the
// scenario looks for members to cancel: a tenth of a second is far below any offset or period worth setting.
constexpr std::chrono::milliseconds kPoll(100);

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One member's state while the members run together; `ended` and `cancel` cross threads.
struct MemberState {
  std::atomic<bool> ended{false};
  std::atomic<bool> cancel{false};        // set by the scenario: a signal, or its `until` member ended
  std::atomic<bool> until_stopped{false};
  std::vector<MemberRun> runs;            // written by the member's thread only, read after it is joined
};

// What the members' threads share.
struct Together {
  const SubmitOptions* base;
  const LoadedScenario* scenario;
  fs::path root;         // the scenario's folder
  bool generated;        // the alone runs generated the members' datasets (--baseline)
  SteadyClock::time_point t0;
  const std::atomic<bool>* cancel;
  std::vector<std::unique_ptr<MemberState>> states;
  std::mutex print_mu;   // one member's lines at a time on out and err
  // Orders a run's start (and its `until` check) against its `until` member's recorded end and `ended`, so that no
  // run starts after the end of the member it runs until.
  std::mutex until_mu;
  std::ostream* out;
  std::ostream* err;
  bool text;

  double Since() const { return std::chrono::duration<double>(SteadyClock::now() - t0).count(); }
  bool UntilEnded(const ScenarioMember& m) const {
    const ScenarioMember* t = scenario->spec.Find(m.until);
    if (t == nullptr) return false;
    return states[static_cast<size_t>(t - scenario->spec.members.data())]->ended;
  }
};

// Sleeps until `when`; false as soon as `stop` says so.
bool SleepUntil(SteadyClock::time_point when, const std::function<bool()>& stop) {
  while (SteadyClock::now() < when) {
    if (stop()) return false;
    std::this_thread::sleep_for(std::min<SteadyClock::duration>(kPoll, when - SteadyClock::now()));
  }
  return !stop();
}

// The member's submission: the command's options with the member's placement.
SubmitOptions MemberOptions(const SubmitOptions& base, const ScenarioMember& m) {
  SubmitOptions o = base;
  if (m.placement.agents > 0) o.agents = m.placement.agents;
  if (!m.placement.agent_names.empty()) o.agent_names = m.placement.agent_names;  // the coordinator places them
  o.share_agents = o.share_agents || m.placement.share;
  return o;
}

// Overrides of a run after the first: a member that trains reads the dataset its first run generated.
std::vector<std::string> RunExtra(const LoadedJob& job, bool first) {
  if (!first && job.spec().generate_data && job.spec().train) return {"workflow.generate_data=False"};
  return {};
}

void PrintRun(Together* t, const std::string& side, const ScenarioMember& m, const MemberRun& r,
              const std::string& log) {
  std::lock_guard<std::mutex> lock(t->print_mu);
  if (!log.empty()) *t->err << log;
  if (!t->text) return;
  const RunOutcome& o = r.outcome;
  *t->out << absl::StrFormat("%s %s run %d: +%.1f s to +%.1f s, job %s, %s%s\n", side, m.name, r.run, r.start_s,
                             r.end_s, o.job_id.empty() ? "-" : o.job_id,
                             o.ok ? VerdictStatusName(o.verdict.status) : "did not succeed",
                             r.stopped_by_until ? absl::StrCat(" (stopped: ", m.until, " ended)") : "")
          << std::flush;
}

// One run of member `i` into `dir` (relative to the root); `first`: its first run of the scenario. Together, none when
// its `until` member has ended (alone runs have no `until`): the check and the start are one step under `until_mu`, as a member's end and its
// `ended` are (a member that does not repeat ends with its one run), so a run never starts after that end.
std::optional<MemberRun> RunOnce(Together* t, size_t i, int k, const std::string& dir, bool first,
                                 const std::string& side) {
  const ScenarioMember& m = t->scenario->spec.members[i];
  MemberState& st = *t->states[i];
  std::ostringstream log;
  MemberRun r;
  r.run = k;
  r.folder = dir;
  {
    std::lock_guard<std::mutex> lock(t->until_mu);
    if (side == "together" && !m.until.empty() && t->UntilEnded(m)) return std::nullopt;
    r.start_s = t->Since();
    r.start_unix_ms = UnixMs();
  }
  r.outcome = SubmitOne(MemberOptions(*t->base, m), t->scenario->jobs[i], RunExtra(t->scenario->jobs[i], first),
                        m.placement.accelerators, (t->root / dir).string(), log, &st.cancel);
  {
    std::lock_guard<std::mutex> lock(t->until_mu);
    r.end_s = t->Since();
    r.end_unix_ms = UnixMs();
    if (!m.repeats()) st.ended = true;
  }
  r.stopped_by_until = st.until_stopped && !r.outcome.ok;
  PrintRun(t, side, m, r, log.str());
  return r;
}

// Member `i` together with the others: its offset, its repetitions, its `until`.
void MemberThread(Together* t, size_t i) {
  const ScenarioMember& m = t->scenario->spec.members[i];
  MemberState& st = *t->states[i];
  const auto stopped = [&] { return st.cancel.load() || (t->cancel != nullptr && t->cancel->load()); };
  const auto at = [&](double s) { return t->t0 + std::chrono::duration_cast<SteadyClock::duration>(
                                                     std::chrono::duration<double>(s)); };
  bool go = SleepUntil(at(m.start_s), [&] { return stopped() || (!m.until.empty() && t->UntilEnded(m)); });
  for (int k = 1; go; ++k) {
    const std::string dir = m.repeats() ? absl::StrCat("together/", m.name, "/run-", k) : "together/" + m.name;
    std::optional<MemberRun> run = RunOnce(t, i, k, dir, /*first=*/!t->generated && k == 1, "together");
    if (!run) break;  // its `until` member ended as it was about to start
    st.runs.push_back(*std::move(run));
    const MemberRun& r = st.runs.back();
    if (!m.repeats() || (m.times > 0 && k >= m.times) || (!r.outcome.ok && !r.stopped_by_until)) break;
    go = SleepUntil(at(m.start_s + k * m.repeat_every_s),
                    [&] { return stopped() || (!m.until.empty() && t->UntilEnded(m)); });
  }
  st.ended = true;
}

// The scenario's own loop while the members run: a signal cancels every member; a member that does not repeat is
// cancelled when its `until` member ended.
void Supervise(Together* t) {
  const std::vector<ScenarioMember>& members = t->scenario->spec.members;
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < members.size(); ++i) {
      MemberState& st = *t->states[i];
      if (st.ended) continue;
      all = false;
      if (t->cancel != nullptr && *t->cancel) st.cancel = true;
      if (!members[i].repeats() && !members[i].until.empty() && t->UntilEnded(members[i]) && !st.cancel) {
        st.until_stopped = true;
        st.cancel = true;
      }
    }
    if (all) return;
    std::this_thread::sleep_for(kPoll);
  }
}

std::vector<std::vector<MemberRun>> RunTogether(Together* t) {
  const size_t n = t->scenario->spec.members.size();
  for (size_t i = 0; i < n; ++i) t->states.push_back(std::make_unique<MemberState>());
  t->t0 = SteadyClock::now();
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) threads.emplace_back(MemberThread, t, i);
  Supervise(t);
  for (std::thread& th : threads) th.join();
  std::vector<std::vector<MemberRun>> out;
  for (const auto& st : t->states) out.push_back(st->runs);
  return out;
}

// --baseline: each member once, alone, one after another, with its placement.
std::vector<std::vector<MemberRun>> RunAlone(Together* t) {
  const size_t n = t->scenario->spec.members.size();
  std::vector<std::vector<MemberRun>> out(n);
  for (size_t i = 0; i < n; ++i) t->states.push_back(std::make_unique<MemberState>());
  t->t0 = SteadyClock::now();
  for (size_t i = 0; i < n; ++i) {
    if (t->cancel != nullptr && *t->cancel) break;
    out[i].push_back(*RunOnce(t, i, 1, "alone/" + t->scenario->spec.members[i].name, /*first=*/true, "alone"));
  }
  t->states.clear();
  return out;
}

// The exit status: 130 on a signal, the first failed run's (not one stopped by `until`), else 0.
int ScenarioStatus(const std::vector<std::vector<MemberRun>>& sides, const std::atomic<bool>* cancel) {
  if (cancel != nullptr && *cancel) return 130;
  for (const std::vector<MemberRun>& runs : sides) {
    for (const MemberRun& r : runs) {
      if (!r.outcome.ok && !r.stopped_by_until) return r.outcome.rc != 0 ? r.outcome.rc : 1;
    }
  }
  return kExitOk;
}

}  // namespace

int RunScenario(const SubmitOptions& base, const LoadedScenario& scenario, bool baseline, std::ostream& out,
                std::ostream& err, const std::atomic<bool>* cancel) {
  const fs::path root =
      base.output_dir.empty() ? fs::path("scenario-" + scenario.spec.name) : fs::path(base.output_dir);
  Together t{&base, &scenario, root, false, {}, cancel, {}, {}, {}, &out, &err, !base.client.json};
  if (t.text) {
    out << "scenario " << scenario.spec.name << ": " << scenario.spec.members.size() << " members"
        << (baseline ? ", each alone first, then together," : "") << " into " << root.string() << "\n"
        << std::flush;
  }
  const int64_t started = UnixMs();
  std::vector<std::vector<MemberRun>> alone;
  if (baseline) {
    alone = RunAlone(&t);
    t.generated = true;
    if (const int rc = ScenarioStatus(alone, cancel); rc != kExitOk) {
      err << "--baseline: a member did not succeed alone; not running them together\n";
      return rc;
    }
  }
  const std::vector<std::vector<MemberRun>> together = RunTogether(&t);
  const json doc = ScenarioJson(scenario, baseline, started, alone, together);
  std::error_code ec;
  fs::create_directories(root, ec);  // a scenario whose runs all failed early has no folder yet
  if (absl::Status s = WriteFileAtomic((root / "scenario.json").string(), doc.dump(2) + "\n"); !s.ok()) {
    err << "scenario: " << s.message() << "\n";
    return 1;
  }
  // One timeline of every member (client/scenario_trace.h), beside the members' own traces.
  if (absl::Status s = WriteScenarioTrace(root, doc); !s.ok()) {
    err << "scenario: " << s.message() << "\n";
    return 1;
  }
  if (t.text) {
    out << InterferenceTable(doc) << "scenario written to " << (root / "scenario.json").string() << "\n";
  } else {
    out << doc.dump(2) << "\n";
  }
  return ScenarioStatus(together, cancel);
}

}  // namespace dlio
