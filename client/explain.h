// Explain: the derived plan of a job, for `submit --explain` and `run --explain` (nothing runs, nothing is written).
//
// ExplainJob() computes, from the normalised job and the fleet it would run on:
//  - train and eval steps per epoch (plan/epoch_plan.h, the same function the agents use), samples and nominal
//    bytes (samples x record_length_bytes) per rank and per agent per epoch;
//  - the bandwidth each accelerator demands at 100 % AU: batch x record_length_bytes / mean computation_time
//    (dlio.md §3's "demand" column), and the fleet's;
//  - the dataset's size against the nodes' RAM, each node's RAM counted once however many agents share it:
//    "potential caching" when a node's share of an epoch (its agents' shares) fits in its RAM (DLIO's
//    potential_caching rule, per host), and MLPerf's 5x-RAM dataset rule over the fleet's nodes;
//  - the figures DLIO's metric window will leave unmeasured with this many steps per epoch (results.h
//    UnmeasuredFigureWarnings), as warnings;
//  - checkpoint bytes per rank per checkpoint (plan/checkpoint_plan.h) and how many checkpoints the job writes
//    and reads, when workflow.checkpoint is on;
//  - every key the job sets with the policy applied to it (job/workload_spec.h KeyPolicy), the warnings, and
//    what a run would stop at (LoadOptions::plan_only);
//  - the measurement guards (plan/measurement_guards.h: loader threads above a node's cores, checkpoint loads the
//    page cache would serve), as warnings;
//  - what a run would be refused for on this fleet before anything starts (plan/preflight.h PreRunRefusals):
//    "refusals", printed first; "runnable" is false when there is any, or a key not supported yet.
// The JSON is the single source; ExplainText() renders it for people. Units: bytes, seconds, bytes per second.
// Thread-safety: pure functions (LocalMemoryBytes reads /proc/meminfo).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/host_facts.h"
#include "job/workload_spec.h"
#include "plan/epoch_plan.h"
#include "nlohmann/json.hpp"

namespace dlio {

// One node (host) of the fleet: its RAM and how many of the job's agents run on it.
struct ExplainNode {
  std::string name;
  uint64_t memory_bytes = 0;
  int64_t agents = 1;
  int64_t cores = 0;   // CPUs online (0 = unknown): the loader-threads guard (plan/measurement_guards.h)
};

struct ExplainFleet {
  int64_t agents = 1;
  int64_t accelerators_per_agent = 1;
  // The nodes the agents run on; empty = RAM unknown.
  std::vector<ExplainNode> nodes;
  // Where the nodes' RAM came from, e.g. "local /proc/meminfo" or "attached agents (coordinator)".
  std::string memory_source;
  // How the fleet size was found, when it is an assumption (printed as a note).
  std::string fleet_note;
};

// `source` names the job file in the output.
nlohmann::json ExplainJob(const WorkloadSpec& spec, const LoadDiagnostics& diag, const ExplainFleet& fleet,
                          const std::string& source);

// The text form of ExplainJob()'s JSON, several lines ending in '\n'.
std::string ExplainText(const nlohmann::json& plan);

}  // namespace dlio
