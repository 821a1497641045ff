// MLPerf Storage mode of dlio-coordinator (docs/mlperf.md): the `mlperf datasize` and `mlperf classify` verbs, the
// data generation (`run|submit --mlperf-datagen`), the 5-run mode (`run|submit --mlperf`, training and checkpointing)
// and the accelerator search (`run|submit --find-max-accelerators`). The results tree they write, and `mlperf
// report`/`mlperf check`, are mlperf/submission.h.
//
// Contract:
//  - Every run or trial is an ordinary job submitted to the coordinator (embedded for `run`) through
//    CoordinatorClient::Run (client/coordinator_client.h), its result files fetched into the MLPerf results layout.
//    Each is the command's job (LoadedJob, loaded once by the verb) with the run's overrides after its own: the job
//    file is not read again. Nothing here talks gRPC itself.
//  - Run k (1-based, after the warm-up run 0) uses train.seed = the job's seed + k, so every run reads in another
//    order (the rules require a seed change per run; mlpstorage v2.0 does not do it). Data generation, when the job
//    asks for it, happens in the warm-up (or the first trial) only. A checkpointing workload (llama3 8B..1T) runs
//    per run a write job and a read job that clears the cache first, and has no warm-up.
//  - Every run is a folder of the results tree, written as it finishes; the set's verdict is computed from the tree
//    by the same code as `mlperf report` (ScoreMlperfSet).
//  - Before the first job of a CLOSED set with a local data root (`run`), the data's and the results' file systems
//    are probed: on one file system the set is refused before anything runs (Rules.md 3.4.2/4.4.2); every run
//    folder records the probe (fs_separation.json). With remote agents (`submit`) each run's record compares the
//    agents' data-root mounts their summary.json reports with the results folder's (mlperf/fs_separation.h), and a
//    CLOSED set on one file system stops after its first run, naming the rule.
//  - Every run folder (the data generation's too) also records the capacity gate (capacity_gate.json, CAP-01) and
//    points at the tree's code image (.mlps-code-image; mlperf/run_records.h), which `mlperf check` verifies.
//  - A run whose coordinator could not be reached (exit 3: a transient connection error between runs) is retried
//    once after kMlperfRetryPause; a second failure stops the set, naming the run and the folders already written.
//  - Exit statuses as the client verbs (client/render.h): 0 every verdict passed (--mlperf: AU PASS in every run,
//    replication PASS, CLOSED or OPEN; --find-max-accelerators: some count passed), 5 a verdict failed (AU FAIL,
//    replication FAIL, INVALID; no count passed), 6 a figure a verdict needs was not measured, 1 a run did not
//    succeed, 2 bad input, 3 coordinator unreachable.
// Thread-safety: one call at a time per process (the drivers are the main thread's work).
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "client/client.h"

namespace dlio {

// The pause before the one retry of a run whose coordinator was unreachable: long enough for a restarted
// coordinator to listen again (it binds within a second) and its agents to re-attach (their first retry is 1 s).
inline constexpr int kMlperfRetryPauseSeconds = 5;

struct DatasizeCliOptions {
  std::string workload;                 // unet3d | retinanet | resnet50 | cosmoflow | dlrm | flux; or from model.name
  std::string mlperf_version = "v3.0";  // --mlperf-version: the round whose workloads are known (rules.h)
  std::string job_path;                 // optional: batch, record length and samples per file from this job
  std::vector<std::string> overrides;
  int64_t accelerators = 1;             // per host
  int64_t hosts = 1;
  double host_memory_gib = 0;           // per host
  bool json = false;
};
// `mlperf datasize`: prints the files needed (5x the hosts' RAM, 500 steps) and the override line.
int MlperfDatasize(const DatasizeCliOptions& opt, std::ostream& out, std::ostream& err);

struct ClassifyCliOptions {
  std::string job_path;                 // the MLPerf workload file; model.name picks the baseline
  std::string references_dir;           // --mlperf-references; empty = the shipped references
  std::string workload;                 // overrides the baseline choice
  std::string accelerator_type;         // the reference file (v3.0: b200 | mi355 | a100 | h100; v2.0: a100 | h100);
                                        // empty = from the job file's name
  std::string mlperf_version = "v3.0";  // --mlperf-version: v3.0 (closed | open | whatif) or v2.0 (closed | open)
  bool allow_invalid_params = false;    // --allow-invalid-params (v3.0): keys outside the lists are OPEN/WHATIF
  std::vector<std::string> overrides;
  int64_t accelerators = 0;             // per host; with host memory: num_files_train against datasize;
                                        // checkpointing: the process count (x hosts)
  int64_t hosts = 1;
  double host_memory_gib = 0;
  bool json = false;
};
// `mlperf classify`: CLOSED / OPEN / WHATIF (v3.0) / INVALID of the effective workload (the file and its overrides)
// against the shipped reference of the round, with the class and the reason of every differing key. Exit 0 CLOSED,
// OPEN or WHATIF, 5 INVALID, 2 bad input.
int MlperfClassify(const ClassifyCliOptions& opt, std::ostream& out, std::ostream& err);

struct MlperfRunOptions {
  int runs = 5;                         // timed runs after the warm-up
  bool warmup = true;                   // training only (§6.6); checkpointing runs have none
  std::string results_dir = "mlperf-results";  // root of the results tree (mlperf/submission.h)
  std::string references_dir;           // --mlperf-references; empty = the shipped references
  // run: the local agents' --data-root, where the fs-separation probe looks for the data (Rules.md 3.4.2/4.4.2);
  // empty (submit: the agents' data roots are on their hosts): their reported mounts are compared after each run.
  std::string data_root;
  // --accelerator-type: the accelerator a checkpointing set emulates (b200, mi355, a100, h100), for Rules.md 4.3.4;
  // empty: not checked (as mlpstorage without the flag).
  std::string accelerator_type;
  // --mlperf-version: the round the runs are classified by (its references and classes), recorded in every run
  // folder's metadata ("mlperf_version") so `mlperf report`/`check` judge the tree by the same round.
  std::string mlperf_version = "v3.0";
};
// `base` is the command's options, `job` its job (LoadSubmission of `base`).
int RunMlperf(const SubmitOptions& base, const LoadedJob& job, const MlperfRunOptions& opt, std::ostream& out,
              std::ostream& err, const std::atomic<bool>* cancel);

// `run|submit --mlperf-datagen`: MLPerf's datagen step through the fleet. Asks the coordinator for the attached
// agents (their nodes and memory), computes datasize's count for them and this job's batch, record length and
// samples per file (num_files_train, and num_subfolders_train above 10,000 files, unless the overrides set them),
// and runs a generate-only job into <results>/training/<model>/datagen/<datetime>/. The 5-run mode then reads that
// count from the tree when the user does not override it. Checkpointing workloads have no dataset (exit 2).
int RunMlperfDatagen(const SubmitOptions& base, const LoadedJob& job, const MlperfRunOptions& opt, std::ostream& out,
                     std::ostream& err, const std::atomic<bool>* cancel);

struct FindMaxOptions {
  int max_accelerators = 16;            // upper bound of the search (accelerators per agent)
};
// Exponential then binary search over accelerators per agent (each trial a real job with
// --accelerators-per-agent N); prints every trial and the largest N whose mean AU >= the workload's threshold.
int FindMaxAccelerators(const SubmitOptions& base, const LoadedJob& job, const FindMaxOptions& opt, std::ostream& out,
                        std::ostream& err, const std::atomic<bool>* cancel);

}  // namespace dlio
