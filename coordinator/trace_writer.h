// TraceWriter: merges the agents' trace events (RankEpochResult::trace_events, results/trace_buffer.h) into one
// Chrome trace-event JSON file (`--trace FILE`; opens in Perfetto and chrome://tracing).
//
// Layout of the file: {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}.
//  - pid = the agent's index in the job (process_name metadata = the agent's name), tid = a track of that agent:
//    rank * 1000 for the rank's step thread ("rank R"), rank * 1000 + 1 + t for its loader thread t
//    ("rank R loader t"), named by thread_name metadata.
//  - Events: "X" (complete) events read (args.bytes), wait, compute, barrier, checkpoint_write, checkpoint_read;
//    "i" (instant, thread scope) events open. ts/dur in microseconds (3 decimals, i.e. ns), ts relative to the
//    job's start (otherData.start_unix_us). Every event carries args.phase (the phase id, e.g. train-epoch-2).
//  - Per track, events are sorted by ts (phases follow each other in time, and each phase's events are sorted
//    per track before they are written), so timestamps never go back on a track.
//  - otherData: job_id, start_unix_us, events (written), dropped_events (the agents' full buffers).
// Memory: bounded by one phase's events: AddPhase() appends them to `<dir>/trace.events.tmp` and frees them;
// Finish() streams that file into `<dir>/trace.json` (temp name, then rename) and removes it.
// Files: all of them through the job folder's descriptor (base/atomic_file.h), never by path, so a folder renamed
// or swapped for a symbolic link mid-job receives them wherever it went and nothing is written through the link.
// Thread-safety: none; the coordinator's runner thread owns it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/confined_dir.h"
#include "results/results.h"

namespace dlio {

class TraceWriter {
 public:
  // `dir`: the job's result folder, open (Coordinator::OpenResultDir); `start_unix_us`: the origin of ts.
  TraceWriter(std::shared_ptr<const ConfinedDir> dir, std::string job_id, int64_t start_unix_us);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Moves the events of one completed phase out of `ranks` (their trace_events are cleared). `agents` maps a rank
  // to its agent (first_rank/ranks).
  absl::Status AddPhase(const std::string& phase_id, std::vector<RankEpochResult>& ranks,
                        const std::vector<AgentInfo>& agents);
  // Writes `<dir>/trace.json`. Call once, at the end of the job (also after a failure: completed phases are kept).
  absl::Status Finish(const std::vector<AgentInfo>& agents);

  uint64_t events() const { return events_; }
  uint64_t dropped() const { return dropped_; }
  std::string path() const { return dir_->path() + "/trace.json"; }

 private:
  std::shared_ptr<const ConfinedDir> dir_;
  std::string job_id_;
  int64_t origin_ns_;
  std::FILE* part_ = nullptr;  // <dir>/trace.events.tmp: events written so far, comma-separated
  uint64_t events_ = 0;
  uint64_t dropped_ = 0;
  std::map<int, std::set<uint32_t>> tracks_;  // pid -> tids seen
};

}  // namespace dlio
