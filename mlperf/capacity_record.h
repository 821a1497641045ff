// The capacity gate's record (MLPerf Storage CAP-01: enough free space for the dataset or the checkpoints before
// running), written by `--mlperf` as capacity_gate.json into every run folder it fills (the data generation's too)
// and read back by `mlperf check` (docs/mlperf.md "Checks").
//
// Contract:
//  - ProbeCapacity(spec, data_root, world): for a training job the dataset (`dataset.data_folder` below data_root:
//    num_files_train x num_samples_per_file x SampleDim()^2 bytes, as agent/preflight.h counts it), for a
//    checkpointing job the checkpoints (`checkpoint.checkpoint_folder`: the plan's bytes on `world` ranks x the saves
//    written or read); the free space (statvfs f_bavail x f_frsize) of the folder's file system (its nearest existing
//    ancestor) and the bytes of the files already in the folder (the job's own, which a generation replaces).
//    `fits` = free + present >= needed. Object storage (s3): nothing local, `probed` false. `error` set when the
//    folder's file system cannot be asked or the checkpoint plan cannot be made.
//  - CapacityRecordJson(): the document of capacity_gate.json.
//  - CapacityRecordProblem(file): what `mlperf check` says about a run folder's record: empty when it shows the
//    job fitting (or data on object storage); "missing", "unreadable" or the numbers when short.
// Thread-safety: free functions, no shared state (they read the file system).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "job/workload_spec.h"
#include "nlohmann/json.hpp"

namespace dlio {

inline constexpr char kCapacityRecordFile[] = "capacity_gate.json";
inline constexpr char kCapacityRule[] = "CAP-01";

struct CapacityRecord {
  std::string key;           // "dataset.data_folder" or "checkpoint.checkpoint_folder"
  std::string where;         // that folder below the data root
  std::string probed;        // the folder or its nearest existing ancestor, statvfs'd
  std::string what;          // "the dataset (8 files x 1 samples x 64^2 bytes)"
  bool object_storage = false;
  uint64_t free_bytes = 0, present_bytes = 0, needed_bytes = 0;
  std::string error;
  bool fits() const { return object_storage || (error.empty() && free_bytes + present_bytes >= needed_bytes); }
};

CapacityRecord ProbeCapacity(const WorkloadSpec& spec, const std::string& data_root, int64_t world);

nlohmann::json CapacityRecordJson(const CapacityRecord& c);

std::string CapacityRecordProblem(const std::filesystem::path& file);

}  // namespace dlio
