// The storage baseline (`dlio-coordinator baseline JOB`, `run|submit JOB --baseline`; docs/results.md "The
// baseline"): what the storage gives a plain reader with no DL semantics, measured on the fleet, and its citation in
// the limit line of later runs of the same dataset.
//
// Contract:
//  - The plain reader is the job itself turned into a read-rate test the agents already know (BaselineOverrides):
//    one training epoch of the dataset's files in order (no shuffle), one file per batch, `threads` loader threads
//    on each agent's one rank, no compute, no evaluation, no checkpoint. Whole-file formats (npz, npy, csv, jpeg,
//    png) read each file whole in 8 MiB pieces; on S3, one GET per object: the endpoint's plain GET rate. The job's
//    train.total_training_steps still bounds the read. The agents still meet at the step barrier between batches,
//    but with no compute it costs only its round trip.
//  - RunBaseline runs it (SubmitOne), its result files into <folder>/baseline/ and baseline.json (BaselineJson) into
//    <folder>, where <folder> is --output, else the job's output.folder, else "baseline"; prints the table
//    (BaselineText) or, with --json, baseline.json. Exit 0 once measured, else the job's status (client/render.h).
//  - A later run or submit cites the baseline of its dataset (FindBaseline: --baseline-file F, else baseline.json in
//    its output folder or that folder's parent) in its limit line: "...; demand 2.1 GB/s per agent; this storage
//    gave a plain reader 1.6 GB/s" (CiteBaseline), on the terminal, in --json and in the fetched summary.json
//    (dlio_ext.verdict.limit.line, and .baseline with the figures cited). A baseline of another dataset is not cited
//    (with --baseline-file, one line says why).
// Thread-safety: plain functions; RunBaseline is the main thread's work, one at a time.
#pragma once

#include <atomic>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "job/workload_spec.h"
#include "nlohmann/json.hpp"

namespace dlio {

// Loader threads per agent of the plain reader when --baseline-threads is not given: enough that one agent keeps a
// local NVMe device or an S3 endpoint busy (elbencho's and warp's defaults are of this order).
inline constexpr int kBaselineDefaultThreads = 16;

// The overrides that turn `spec`'s job into the plain reader with `threads` loader threads (1..256).
std::vector<std::string> BaselineOverrides(const WorkloadSpec& spec, int threads);

// The dataset a baseline measured, the key that matches it with a later job: storage type and root, data folder,
// format, files.
nlohmann::json BaselineDataset(const WorkloadSpec& spec);

// baseline.json from the plain reader's result files in `dir` (summary.json and <rank>_output.json): {"dataset",
// "threads_per_agent", "block_size_bytes", "job_id", "agents": [{"name", "hostname", "MB_per_second",
// "files_per_second", "bytes", "files", "seconds", "threads"}], "total": {"MB_per_second", "files_per_second",
// "bytes", "files", "seconds", "threads"}, "s3": {"get_requests", "gets_per_second"} (S3 only)}. MB = 10^6 bytes;
// the total's seconds run from the first rank's start to the last rank's end. NotFound/DataLoss naming the file.
absl::StatusOr<nlohmann::json> BaselineJson(const std::string& dir, const WorkloadSpec& spec, int threads,
                                            const std::string& job_id);
// The table printed by `baseline`: one line per agent and the total.
std::string BaselineText(const nlohmann::json& baseline);

int RunBaseline(const SubmitOptions& base, const LoadedJob& job, int threads, std::ostream& out, std::ostream& err,
                const std::atomic<bool>* cancel);

// The baseline a run of `spec` cites: `file` when given (one line on `err` when it cannot be read or measured
// another dataset), else baseline.json in `output_dir` or its parent when it measured this dataset; nullopt else.
std::optional<nlohmann::json> FindBaseline(const std::string& file, const std::string& output_dir,
                                           const WorkloadSpec& spec, std::ostream& err);
// "demand 2.1 GB/s per agent; this storage gave a plain reader 1.6 GB/s" (the demand left out when the job has no
// computation time: it is unbounded); `ranks_per_agent` scales DLIO's demand per accelerator.
std::string BaselineCitation(const nlohmann::json& baseline, const WorkloadSpec& spec, int ranks_per_agent);
// Appends the citation to `outcome`'s limit line (when it has one) and to the summary.json in `output_dir`.
void CiteBaseline(const nlohmann::json& baseline, const WorkloadSpec& spec, const std::string& output_dir,
                  JobOutcome* outcome);

}  // namespace dlio
