#include "client/scenario_trace.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "results/results.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The tracks of a member (docs/scenarios.md "The trace"); the alone runs' are the same + kAloneTracks.
constexpr int kRunsTrack = 1;
constexpr int kPhasesTrack = 2;
constexpr int kCheckpointsTrack = 3;
constexpr int kStepsTrack = 100;  // + the rank: ranks beyond 899 would reach the alone tracks, far above any fleet
constexpr int kAloneTracks = 1000;

// A file of a run's folder, parsed; null when it is missing or not JSON (a run that failed early).
json LoadOrNull(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return json();
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json() : j;
}

// o[key], or null when `o` is no object or has no such member (a const json's operator[] may not be asked for a
// missing key).
const json& At(const json& o, const std::string& key) {
  static const json kNull;
  if (!o.is_object()) return kNull;
  auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

// A "start"/"end" pair of a results file as unix microseconds; false when either is missing or malformed.
bool Span(const json& o, int64_t* start_us, int64_t* end_us) {
  if (!At(o, "start").is_string() || !At(o, "end").is_string()) return false;
  absl::StatusOr<int64_t> s = ParseTimestamp(At(o, "start").get<std::string>());
  absl::StatusOr<int64_t> e = ParseTimestamp(At(o, "end").get<std::string>());
  if (!s.ok() || !e.ok()) return false;
  *start_us = *s;
  *end_us = std::max(*s, *e);
  return true;
}

// The events of the trace, per (pid, tid), and the names of their tracks.
class TraceEvents {
 public:
  explicit TraceEvents(int64_t origin_us) : origin_us_(origin_us) {}

  // A complete event from `start_us` to `end_us` (unix microseconds).
  void Add(int pid, int tid, const std::string& name, const char* cat, double start_us, double end_us,
           json args = json::object()) {
    const double ts = start_us - static_cast<double>(origin_us_);
    tracks_[{pid, tid}].push_back({{"name", name}, {"cat", cat}, {"ph", "X"}, {"ts", Round3(ts)},
                                   {"dur", Round3(std::max(0.0, end_us - start_us))}, {"pid", pid}, {"tid", tid},
                                   {"args", std::move(args)}});
  }
  void NameTrack(int pid, int tid, std::string name) { names_[{pid, tid}] = std::move(name); }

  // The metadata events, then every track's events sorted by ts.
  json Take(const std::vector<std::string>& members, size_t* events) {
    json out = json::array();
    for (size_t i = 0; i < members.size(); ++i) {
      const int pid = static_cast<int>(i) + 1;
      out.push_back(Meta("process_name", pid, 0, {{"name", "member " + members[i]}}));
      out.push_back(Meta("process_sort_index", pid, 0, {{"sort_index", i}}));
    }
    for (const auto& [key, name] : names_) {
      if (tracks_.count(key) == 0) continue;  // a track without events is not drawn
      out.push_back(Meta("thread_name", key.first, key.second, {{"name", name}}));
      out.push_back(Meta("thread_sort_index", key.first, key.second, {{"sort_index", key.second}}));
    }
    *events = 0;
    for (auto& [key, list] : tracks_) {
      std::stable_sort(list.begin(), list.end(),
                       [](const json& a, const json& b) { return a["ts"].get<double>() < b["ts"].get<double>(); });
      *events += list.size();
      for (json& e : list) out.push_back(std::move(e));
    }
    return out;
  }

 private:
  static double Round3(double us) { return static_cast<double>(static_cast<int64_t>(us * 1000 + 0.5)) / 1000; }
  static json Meta(const char* name, int pid, int tid, json args) {
    return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
  }
  const int64_t origin_us_;
  std::map<std::pair<int, int>, std::vector<json>> tracks_;
  std::map<std::pair<int, int>, std::string> names_;
};

// Steps of epoch `e` in a rank's <rank>_output.json: every block's compute times.
size_t StepsOf(const json& output, const std::string& e) {
  size_t steps = 0;
  const json& compute = At(At(output, e), "compute");
  if (!compute.is_object()) return 0;
  for (const auto& [block, times] : compute.items()) steps += times.is_array() ? times.size() : 0;
  return steps;
}

// One run's phases: generation (summary.json), epochs with their blocks and evaluations, checkpoints
// (rank 0's per_epoch_stats.json).
void AddPhases(TraceEvents* t, int pid, int base, const fs::path& folder) {
  const json summary = LoadOrNull(folder / "summary.json");
  int64_t start = 0, end = 0;
  const json& generate = At(At(summary, "dlio_ext"), "generate");
  if (Span(summary, &start, &end) && generate.is_object()) {
    const double seconds = generate.value("seconds", 0.0);
    if (seconds > 0) t->Add(pid, base + kPhasesTrack, "generate", "phase", start, start + seconds * 1e6);
  }
  const json stats = LoadOrNull(folder / "0_per_epoch_stats.json");
  if (!stats.is_object()) return;
  const json output = LoadOrNull(folder / "0_output.json");
  for (const auto& [e, epoch] : stats.items()) {
    if (Span(epoch, &start, &end)) {
      t->Add(pid, base + kPhasesTrack, "train-epoch-" + e, "phase", start, end, {{"steps", StepsOf(output, e)}});
    }
    if (!epoch.is_object()) continue;
    for (const auto& [key, part] : epoch.items()) {
      if (!Span(part, &start, &end)) continue;
      if (absl::StartsWith(key, "block")) {
        t->Add(pid, base + kPhasesTrack, key, "phase", start, end, {{"epoch", e}});
      } else if (key == "eval") {
        t->Add(pid, base + kPhasesTrack, "eval-" + e, "phase", start, end);
      } else if (absl::StartsWith(key, "save_ckpt") || absl::StartsWith(key, "load_ckpt")) {
        t->Add(pid, base + kCheckpointsTrack, key, "checkpoint", start, end,
               {{"epoch", e}, {"bytes", part.value("bytes", uint64_t{0})}});
      }
    }
  }
}

// One run's steps, from its own trace.json (dlio_ext.trace): the step threads' events, moved to the scenario's
// time axis. Returns the ranks seen.
std::vector<int> AddSteps(TraceEvents* t, int pid, int base, const fs::path& folder) {
  const json trace = LoadOrNull(folder / "trace.json");
  std::vector<int> ranks;
  if (!At(trace, "traceEvents").is_array() || !At(trace, "otherData").is_object()) return ranks;
  const double start_us = At(trace, "otherData").value("start_unix_us", 0.0);
  for (const json& e : At(trace, "traceEvents")) {
    if (!e.is_object() || e.value("ph", "") != "X" || e.value("cat", "") != "step") continue;
    const int tid = e.value("tid", 0);
    if (tid % 1000 != 0) continue;  // loader threads (reads) stay in the member's own trace
    const int rank = tid / 1000;
    const double ts = start_us + e.value("ts", 0.0);
    t->Add(pid, base + kStepsTrack + rank, e.value("name", "step"), "step", ts, ts + e.value("dur", 0.0),
           At(e, "args").is_object() ? At(e, "args") : json::object());
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) ranks.push_back(rank);
  }
  return ranks;
}

// Every run of one side of a member: its span, its phases, its steps; the tracks named.
void AddSide(TraceEvents* t, const fs::path& root, const json& member, int pid, const char* side) {
  const json& runs = At(At(member, side), "runs");
  if (!runs.is_array()) return;
  const int base = std::string(side) == "alone" ? kAloneTracks : 0;
  const bool repeats = At(member, "repeat_every_seconds").is_number();
  for (const char* what : {"runs", "phases", "checkpoints"}) {
    const int tid = base + (what[0] == 'r' ? kRunsTrack : what[0] == 'p' ? kPhasesTrack : kCheckpointsTrack);
    t->NameTrack(pid, tid, absl::StrCat(side, ": ", what));
  }
  for (const json& run : runs) {
    const double start_ms = run.value("start_unix_ms", 0.0), end_ms = run.value("end_unix_ms", 0.0);
    t->Add(pid, base + kRunsTrack, absl::StrCat("run ", run.value("run", 1)), repeats ? "burst" : "run",
           start_ms * 1000, std::max(start_ms, end_ms) * 1000,
           {{"folder", run.value("folder", "")}, {"job_id", run.value("job_id", "")}, {"ok", run.value("ok", false)},
            {"verdict", run.value("verdict", "")}});
    const fs::path folder = root / run.value("folder", "");
    AddPhases(t, pid, base, folder);
    for (int rank : AddSteps(t, pid, base, folder)) {
      t->NameTrack(pid, base + kStepsTrack + rank, absl::StrCat(side, ": steps rank ", rank));
    }
  }
}

}  // namespace

json ScenarioTraceJson(const fs::path& root, const json& doc) {
  const int64_t origin_ms = doc.value("started_unix_ms", int64_t{0});
  TraceEvents t(origin_ms * 1000);
  std::vector<std::string> names;
  int64_t last_ms = origin_ms;
  const json members = doc.value("members", json::array());
  for (size_t i = 0; i < members.size(); ++i) {
    const json& m = members[i];
    names.push_back(m.value("name", absl::StrCat("member ", i + 1)));
    for (const char* side : {"alone", "together"}) {
      AddSide(&t, root, m, static_cast<int>(i) + 1, side);
      const json& runs = At(At(m, side), "runs");
      if (!runs.is_array()) continue;
      for (const json& run : runs) {
        last_ms = std::max(last_ms, run.value("end_unix_ms", origin_ms));
      }
    }
  }
  size_t events = 0;
  json trace = {{"traceEvents", t.Take(names, &events)}, {"displayTimeUnit", "ms"}};
  trace["otherData"] = {{"scenario", doc.value("scenario", "")},
                        {"started_unix_ms", origin_ms},
                        {"span_us", (last_ms - origin_ms) * 1000},
                        {"members", names.size()},
                        {"events", events}};
  return trace;
}

absl::Status WriteScenarioTrace(const fs::path& root, const json& doc) {
  const fs::path path = root / "trace.json";
  absl::Status s = WriteFileAtomic(path.string(), ScenarioTraceJson(root, doc).dump() + "\n");
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("scenario trace '", path.string(), "': ", s.message()));
  return s;
}

}  // namespace dlio
