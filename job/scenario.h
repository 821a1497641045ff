// Scenario files: several DLIO workloads run at once on one fleet (issue 30, docs/scenarios.md). A scenario file is
// a YAML document whose top-level key is `scenario:`; under it a `name`, an optional `description` and `members`,
// each member a workload (a file path or shipped workload name, resolved by the client as the job argument of `run`,
// or an inline workload mapping) with its overrides, its placement and its timing:
//
//   scenario:
//     name: unet3d-with-checkpoints
//     members:
//       - name: train
//         workload: unet3d_h100          # or `inline: {model: ..., dataset: ...}`
//         overrides: [dataset.num_files_train=64]
//         placement: {agents: 1, accelerators: 4}
//       - name: checkpoint
//         workload: llama3_8b
//         start: 10                      # seconds after the scenario starts (default 0)
//         repeat_every: 60               # run again every 60 s, counted from `start`
//         until: train                   # no new run after `train` ended
//
// Contract:
//  - IsScenarioText(): true when `text` is a YAML mapping whose top-level keys include `scenario` (how `run` and
//    `submit` tell a scenario from a workload); false for anything else, a YAML syntax error included.
//  - ParseScenario(): the whole file checked before anything runs; every error is InvalidArgument, one line
//    "SOURCE:LINE: scenario.members[I].KEY: '<value>' <why>; expected <what is allowed>" (the line when known).
//    Rules: member names unique, [A-Za-z0-9_.-], at most 64 characters (a member's folder is its name); exactly one
//    of `workload`/`inline`; `repeat_every` needs `until` or `times` (a member never repeats forever); `until`
//    names another member, and following `until` from any member reaches a member without it (no circle);
//    `placement.agent_names`, when `placement.agents` is also set, lists that many names.
//  - ScenarioMember::inline_yaml is the inline mapping written back as YAML, a workload file's text.
// Thread-safety: pure functions over values.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dlio {

// Where a member runs: the submission's placement (client/client.h SubmitOptions, JobPlacement).
struct ScenarioPlacement {
  int agents = 0;                        // 0 = every attached agent (or, with agent_names, their count)
  int accelerators = 0;                  // per agent; 0 = what the agents offer
  std::vector<std::string> agent_names;  // these agents only
  bool share = false;                    // may share agents with other members (disjoint accelerators)
};

struct ScenarioMember {
  std::string name;
  std::string workload;     // as written (a path or a shipped name); empty for an inline workload
  std::string inline_yaml;  // the inline workload as YAML text; empty for `workload`
  std::vector<std::string> overrides;
  ScenarioPlacement placement;
  double start_s = 0;         // seconds after the scenario's start
  double repeat_every_s = 0;  // 0: runs once
  int times = 0;              // with repeat_every: at most this many runs; 0 = no bound (then `until` ends it)
  std::string until;          // another member's name; empty: none
  int line = 0;               // the member's line in the file (0: unknown)

  bool repeats() const { return repeat_every_s > 0; }
};

struct ScenarioSpec {
  std::string source;  // the file's name, as given
  std::string name;
  std::string description;
  std::vector<ScenarioMember> members;

  // The member called `name`; null when none is.
  const ScenarioMember* Find(const std::string& name) const;
};

// The bounds of the file, said in the errors.
inline constexpr int kMaxScenarioMembers = 64;
inline constexpr double kMaxScenarioSeconds = 7 * 24 * 3600;  // a week: any offset or period beyond is a typo
inline constexpr int kMaxScenarioRuns = 10000;                 // `times`

bool IsScenarioText(const std::string& text);

// `source` names the file in the errors.
absl::StatusOr<ScenarioSpec> ParseScenario(const std::string& text, const std::string& source);

}  // namespace dlio
