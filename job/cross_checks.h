// The checks that involve several keys of a job, made once every key is applied (the loader, workload_spec.cc, runs
// them before the job is accepted). Internal to dlio::job. The format's rules come from its row of the registry
// (job/format_traits.h): its compressions, image shape, io engines; the sample shapes from job/shape.cc.
//
// Contract: each returns the first problem as one line naming a key: InvalidArgument, or Unimplemented for a DLIO
// feature not supported yet (LoadOptions::plan_only tolerates those).
// Thread-safety: free functions without state; safe from any thread.
#pragma once

#include "absl/status/status.h"
#include "job/workload_spec.h"

namespace dlio::workload_internal {

// The workflow, compression against the format, record_dims, image shapes, transformer sizing, the means of the
// distributions, the io engine against the format, the sizes the keys make together, the sample shape.
absl::Status CheckWhole(const WorkloadSpec& s);
// The storage keys against the rest of the job. May set storage_root from an s3:// data_folder or
// checkpoint_folder (the bucket).
absl::Status CheckStorage(WorkloadSpec& s);

}  // namespace dlio::workload_internal
