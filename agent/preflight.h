// Checks an agent makes before it writes a dataset, so a job that cannot work fails at once with the reason instead
// of filling a file system. No gRPC here.
//
// DatasetBytes(): the bytes the dataset's samples take, num_files_train x num_samples_per_file x SampleDim()^2 (the
// mean size when record_length_bytes_stdev spreads them); format headers add a little, so this never overstates.
// CheckDatasetFits(): free space (statvfs f_bavail x f_frsize, what an unprivileged writer may use) of the file
// system holding `data_dir` (its nearest existing ancestor when it does not exist yet), plus the bytes of dataset
// files already there (generation replaces them), against DatasetBytes(). The whole dataset is counted, not this
// agent's share: by default every agent writes into one shared data folder. The refusal gives both numbers.
// CheckCheckpointsFit(): at the job's first phase that writes on this agent (FirstWritingPhase), the bytes of every
// save of the job by this agent's ranks (plan/checkpoint_plan.h: CheckpointSaveDirs x the ranks' files; saves are
// never deleted) against the free space of the checkpoint folder's file system, so a job whose checkpoints cannot
// fit fails before it writes anything instead of filling the file system mid-run. Files already at those paths count
// as free space (a save replaces them), less the largest file of each rank (its old copy stands beside the new one
// until the rename). When the phase generates the dataset on the same file system, the dataset's new bytes are
// counted first. Per agent: with a checkpoint folder shared by several agents, each checks its own ranks' share.
// Object storage and jobs without checkpoints: nothing to check. The refusal gives both numbers.
// CheckDatasetPresent(): with workflow.generate_data off, at the first training epoch (ReadsExistingDataset), at
// least one file of the dataset's format under data_dir/train; none there (no folder, an empty one) is NotFound,
// naming the folder and num_files_train, and the agent refuses the phase (the job ends refused, exit 2) instead of
// failing it. A dataset with some of its files is left to the epoch's own listing (it names what it found). Object
// storage: nothing to check here.
// Errors: "does not fit" is RESOURCE_EXHAUSTED (the agent then refuses the phase: ERROR_CODE_REFUSED, the job ends
// refused); any other code (a statvfs that failed, a folder that is not allowed) is a failure of the phase.
// Thread-safety: pure functions (they read the file system).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "base/confined_dir.h"
#include "job/phase.h"
#include "job/workload_spec.h"

namespace dlio {

uint64_t DatasetBytes(const WorkloadSpec& spec);

// Free bytes for an unprivileged writer on the file system of `path` or of its nearest existing ancestor.
absl::StatusOr<uint64_t> FreeBytes(const std::filesystem::path& path);

// `ext`: the format's file extension (existing files with it under data_dir/train count as free space).
absl::Status CheckDatasetFits(const std::filesystem::path& data_dir, const WorkloadSpec& spec, const std::string& ext);

// The general check, for whatever an agent is about to write (a dataset, checkpoints): `need` bytes into `dir`,
// `reclaimable` of which are files it will replace. `what` names the data in the refusal ("the dataset (...)").
absl::Status CheckSpace(const std::filesystem::path& dir, const std::string& key, uint64_t need,
                        uint64_t reclaimable, const std::string& what);

// True when `order` is the first read of a job that reads a dataset it does not generate, from files: its listing of
// train/ (a kList phase), or its first training epoch when that carries no listing.
bool ReadsExistingDataset(const PhaseOrder& order, const WorkloadSpec& spec);

// OK unless ReadsExistingDataset() and data_dir/train holds no file with extension `ext` (NotFound).
absl::Status CheckDatasetPresent(const std::filesystem::path& data_dir, const PhaseOrder& order,
                                 const WorkloadSpec& spec, const std::string& ext);

// True when `order` is the job's first phase that writes on this agent: generate, else the first training epoch,
// else (checkpoint-only) the first save.
bool FirstWritingPhase(const PhaseOrder& order, const WorkloadSpec& spec);

// OK unless `order` is FirstWritingPhase() of a job that saves checkpoints to files below `root` and they do not fit
// (ResourceExhausted, naming checkpoint.checkpoint_folder); `ext` as for CheckDatasetFits.
absl::Status CheckCheckpointsFit(const ConfinedDir& root, const PhaseOrder& order, const WorkloadSpec& spec,
                                 const std::string& ext);

}  // namespace dlio
