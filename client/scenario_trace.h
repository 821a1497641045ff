// The scenario's trace (issue 30 item 3): one Chrome trace-event file (<folder>/trace.json; Perfetto,
// chrome://tracing) with every member of a scenario on one time axis, written by RunScenario (client/scenario.h)
// beside scenario.json and the members' own folders (whose trace.json, when a member has dlio_ext.trace on, stays
// as it is).
//
// Layout (docs/scenarios.md "The trace"): {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {"scenario",
// "started_unix_ms", "span_us", "members", "events"}}.
//  - pid = the member's index + 1 (process_name "member <name>", process_sort_index = the index); tid = a track of
//    that member, named by thread_name metadata: together 1 "together: runs" (a "run <k>" per run, category "burst"
//    for a member that repeats, else "run"), 2 "together: phases" (generate, train-epoch-<e> with args.steps, its
//    block<b>, eval-<e>, from the run's summary.json and 0_per_epoch_stats.json), 3 "together: checkpoints"
//    (save_ckpt<n>, load_ckpt<n>, args.bytes), 100 + r "together: steps rank r" (wait, compute, barrier and the
//    checkpoint events of rank r's step thread, taken from the run's own trace.json when it has one). The alone runs
//    of --baseline the same on tids + 1000 ("alone: ...").
//  - ts/dur in microseconds (3 decimals) from the scenario's start (scenario.json started_unix_ms), so every event
//    of every member lies in [0, span_us]; events sorted by ts on each track.
// Missing or unreadable run files leave their events out (a run that failed early has none); only the trace file
// itself failing to be written is an error.
// Thread-safety: pure functions over files.
#pragma once

#include <filesystem>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace dlio {

// The trace of the scenario folder `root` whose scenario.json is `doc` (client/scenario.h ScenarioJson).
nlohmann::json ScenarioTraceJson(const std::filesystem::path& root, const nlohmann::json& doc);
// Writes ScenarioTraceJson to <root>/trace.json (temporary name, then rename). The error names the file.
absl::Status WriteScenarioTrace(const std::filesystem::path& root, const nlohmann::json& doc);

}  // namespace dlio
