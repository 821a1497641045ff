// Coordinator::Job: one job as the coordinator keeps it from Submit() (or its restore from the store) to its end:
// its record, its workload, its events and watchers, and, once placed and running, where it runs, its PhaseDriver
// and what its phases returned; Coordinator::Fit, what placement found for it. Private to the coordinator's files
// (coordinator.cc, job_runner.cc, placement.cc).
// Thread-safety: guarded by the coordinator's mutex (reached only through its guarded jobs_ and running_); the
// fields only the job's own thread changes (result, trace, folder) are read by it without the lock while it writes
// files.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "coordinator/coordinator.h"
#include "coordinator/trace_writer.h"

namespace dlio {

// Wall-clock time for records and result files (never for durations: those use Options::now).
inline int64_t NowUnixUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Coordinator::Job {
  JobRecord rec;
  WorkloadSpec spec;
  std::vector<JobEventData> events;
  bool cancel_requested = false;
  JobResult result;                  // result.agents: the placement (agent_index's order), once placed
  uint64_t done = 0, total = 0;      // the fleet's last published progress in its running (or last) phase
  JobState end_state = JobState::kFailed;
  std::string end_message;
  int next_save_index = 1;           // the index the job's next checkpoint save gets
  int completed_epoch = 0;           // the last epoch whose phases all succeeded (rec.epochs_done trails it)
  // Mean AU (percent) and samples/s of the training epochs done so far (EmitEpochLine), for status and list.
  std::optional<double> completed_au_percent, completed_samples_per_second;
  std::string spec_yaml;             // ToYaml(spec), made once: every phase order carries it
  std::unordered_map<std::string, size_t> agent_index;  // rec.agent_names[i] -> i, once placed
  std::map<uint64_t, EventSink> watchers;  // Watch(): sinks fed by Emit() until the final event
  std::unique_ptr<TraceWriter> trace;  // dlio_ext.trace: the merged trace, fed phase by phase (runner thread only)
  // The result folder (Coordinator::OpenResultDir), held from the job's first file to its end (runner thread only).
  std::shared_ptr<const ConfinedDir> folder;
  bool refused = false;              // refused at placement (plan/preflight.h) or by an agent's preflight
                                     // (agent/preflight.h): its final event says so
  PhaseDriver driver;                // its running phase (after it, until the job ends, its last phase)
  // Queued: why it waits (the message `list` and `status` show), and the end of its --wait-for-agents wait once the
  // attached fleet could not take it (unset before; the real steady clock, as the client means its seconds).
  std::string waiting;
  std::optional<Clock::time_point> wait_deadline;
};

struct Coordinator::Fit {
  enum class Kind { kPlaced, kBusy, kNever, kFailed } kind = Kind::kNever;
  std::string why;                   // kBusy, kNever, kFailed: one line
  std::vector<AgentInfo> agents;     // kPlaced: the chosen agents, in rank order
  int per_agent = 0;                 // kPlaced: accelerators each runs
};

}  // namespace dlio
