// Object storage sizes every side of the project agrees on: the object writer's multipart parts
// (storage/s3/engine.h), the checkpoint writer's buffer, which is also its part size over S3 (agent/checkpointer.h),
// and the pre-run check of both (plan/preflight.h), which refuses a job whose data files or checkpoint files could
// not be uploaded, instead of its upload failing mid-run.
//
// Objects up to kS3MultipartThreshold go in one PUT; larger ones in parts of kS3PartBytes (the last one smaller).
// 8 MiB for both is boto3's TransferConfig default; S3's own limits are parts of at least 5 MiB (except the last)
// and at most 10,000 parts, so 8 MiB parts reach ~78 GiB objects and the checkpoint writer's 64 MiB parts ~625 GiB.
// Thread-safety: constants.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dlio {

inline constexpr size_t kS3MultipartThreshold = size_t{8} << 20;
inline constexpr size_t kS3PartBytes = size_t{8} << 20;
inline constexpr size_t kS3MinPartBytes = size_t{5} << 20;
inline constexpr int kS3MaxParts = 10000;
// The checkpoint writer's buffer: one per rank, and the part size of a checkpoint file's multipart upload.
inline constexpr size_t kCheckpointBufferBytes = size_t{64} << 20;

// The largest object a multipart upload in parts of `part_bytes` can make.
inline constexpr uint64_t S3MaxObjectBytes(size_t part_bytes) {
  return static_cast<uint64_t>(part_bytes) * static_cast<uint64_t>(kS3MaxParts);
}

}  // namespace dlio
