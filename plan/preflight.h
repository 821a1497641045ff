// Preflight: every refusal a job's own values cause on a given fleet, found before anything runs.
//
// Loading a job (job/workload_spec.h) checks each key and the keys together, without knowing the fleet. What
// depends on the world, or only shows once the plan is worked out, used to stop a phase mid-run instead (after
// generation, say). PreRunRefusals() computes all of it, in one place, from the spec and the fleet's shape:
//  - the training epoch plan (plan/epoch_plan.h): no step for this world (batch x ranks above the dataset),
//    tfrecord ranks with less than one batch, total_training_steps above the steps this world gets;
//  - the evaluation plan, when evaluations run (batch_size_eval, num_files_eval);
//  - the checkpoint plan (plan/checkpoint_plan.h), when workflow.checkpoint: TP x PP not dividing the world, a
//    pipeline deeper than the layers, ...;
//  - the loader threads an agent would run (reader.read_threads x ranks per agent, job/workload_spec.h
//    CheckAgentThreads, which the agent applies again);
//  - under a size spread (record_length_bytes_stdev), the shape of every file the generator would write, against
//    the format's keys (hdf5 num_dset_per_record, chunk_dims, max_shape; the image side limit).
//  - object storage (storage.storage_type s3): a data file the generator would write, or a checkpoint file, larger
//    than the object a multipart upload can make (10,000 parts of 8 MiB, resp. of the 64 MiB checkpoint buffer:
//    job/s3_limits.h).
// (Refused when the job is loaded already, earlier still: a relative folder that climbs out of any data root, and
// the storage keys against the rest of the job: mmap_indexed_binary, an io_engine or a cache eviction over s3,
// job/workload_spec.h CheckFormatReadsObjects.)
// It is what --explain reports (client/explain.h), what `run` checks with its local fleet before starting it,
// what `submit` checks when --agents and --accelerators-per-agent fix the world, and what the coordinator checks
// when it has placed a job, before any phase. Each refusal is one line naming the key and what is allowed.
// Cost: O(files) under a size spread (one hash per file), O(1) otherwise; the checkpoint plan is O(world).
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job/workload_spec.h"

namespace dlio {

struct JobWorld {
  int64_t agents = 1;
  int64_t ranks_per_agent = 1;
  int64_t world() const { return agents * ranks_per_agent; }
};

// Empty when the job can run on this fleet; otherwise one line per refusal, in the order a run would meet them.
std::vector<std::string> PreRunRefusals(const WorkloadSpec& spec, const JobWorld& world);

// "world size 8 (2 agent(s) x 4 accelerator(s))": how refusals name the fleet.
std::string DescribeWorld(const JobWorld& world);

}  // namespace dlio
