#include "storage/open.h"

#include "storage/io_util.h"
#include "storage/s3/engine.h"

namespace dlio {

absl::StatusOr<std::unique_ptr<StorageReader>> NewStorageReader(const StorageTarget& target) {
  // Without a configuration StorageReader::New() refuses kS3 with the error a missing bucket deserves.
  if (target.engine == IoEngine::kS3 && target.s3) return NewS3StorageReader(target.s3);
  return StorageReader::New(target.engine, target.dir);
}

std::unique_ptr<internal::WriteSink> NewWriteSink(const StorageTarget& target) {
  if (target.engine == IoEngine::kS3) return std::make_unique<S3ObjectWriter>(target.s3);
  return std::make_unique<internal::FileSink>(target.dir);
}

}  // namespace dlio
