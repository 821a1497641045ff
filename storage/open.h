// The storage factory: the one place that turns a StorageTarget (storage.h) into the engine that reads it and the
// sink that writes it, and the only file of storage/ outside s3/ that knows S3 (storage/CMakeLists.txt says who may
// include storage/s3/). The format readers call it once per reader or per file written, never per sample.
//
//  - NewStorageReader(): a file engine (StorageReader::New: posix, odirect, io_uring, mmap, below target.dir when
//    given) or, for IoEngine::kS3, the s3 engine over target.s3 (storage/s3/engine.h). Errors: kS3 without a bucket
//    configuration is FailedPrecondition; io_uring set-up failures name dlio_ext.io_engine.
//  - NewWriteSink(): what internal::FileWriter (io_util.h) writes through: an internal::FileSink below target.dir
//    (when given) for the file engines, an S3ObjectWriter over target.s3 for kS3 (its own connection to the bucket,
//    made here, kept for every object the sink writes).
// Thread-safety: both functions may be called from any thread; what they return belongs to one thread.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "storage/storage.h"
#include "storage/write_sink.h"

namespace dlio {

absl::StatusOr<std::unique_ptr<StorageReader>> NewStorageReader(const StorageTarget& target);
std::unique_ptr<internal::WriteSink> NewWriteSink(const StorageTarget& target);

}  // namespace dlio
