// The generate phase (PhaseKind::kGenerate): writes this agent's share of the dataset, as DLIO's generator does.
//
// First DLIO's folder layout (readers/format.h DatasetFolders: train/, valid/, subfolders, the tfrecord index
// folders, empty ones too, so DLIO's own reader accepts the dataset; every agent makes them, idempotently; a bucket
// has none). Then file i of a split belongs to global rank i % world (DLIO's round-robin); each local rank writes
// its files through the format library with a few GenerateWorker threads (the cores shared among the local ranks,
// so one file's fdatasync overlaps the next one's generation), under a temporary name renamed when the file is
// complete. Object storage: objects appear whole at their final keys (no rename, no fsync), and multipart uploads an
// earlier failed run left under this agent's own keys are aborted first.
// Progress: total = this agent's files, done/samples/bytes grow as files complete.
// Thread-safety: RunGenerate runs one phase; its workers share only the progress (atomic), a stop flag and the
// phase's FirstError.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "results/results.h"

namespace dlio {

struct PhaseContext;

// One RankEpochResult per local rank (epoch 0, no blocks), with the bytes the rank wrote in `io`.
absl::StatusOr<std::vector<RankEpochResult>> RunGenerate(const PhaseContext& ctx);

}  // namespace dlio
