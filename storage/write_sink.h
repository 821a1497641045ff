// WriteSink: where internal::FileWriter (io_util.h) puts the bytes of one file or object it writes. FileWriter
// gathers small appends into kWriteChunk pieces and hands each piece to its sink in one Append() call, so writing
// costs one virtual call per chunk, not per sample. Two sinks: internal::FileSink (io_util.h: a file, each pwrite()
// one IoStats op) and S3ObjectWriter (storage/s3/engine.h: an object, each PUT or part one op). A sink is made by
// NewWriteSink() (storage/open.h), the one place that knows which sink a StorageTarget needs; the readers never
// name a sink of their own.
//
// Contract:
//  - Open(path) starts a new file or object (abandoning an unfinished previous one); errors name the path.
//  - Append(data, n) writes n bytes after those written since Open(); the caller's memory is not kept.
//  - Finish() makes the file or object complete and counts it (IoStats::AddFile). After an error the sink may be
//    opened again for another path.
//  - A sink may be opened again for the next file (its connection or buffer kept); today's callers make one
//    FileWriter, and so one sink, per file.
//  - Gathers() is true for a sink that gathers appends into its own buffer (S3ObjectWriter's parts): FileWriter then
//    hands it every append as it comes instead of copying it into a staging chunk first.
// Thread-safety: none; a sink belongs to the thread that writes through it.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "results/io_stats.h"

namespace dlio::internal {

class WriteSink {
 public:
  virtual ~WriteSink() = default;
  virtual absl::Status Open(const std::string& path) = 0;
  virtual absl::Status Append(const void* data, size_t n, IoStats& stats) = 0;
  virtual absl::Status Finish(IoStats& stats) = 0;
  virtual bool Gathers() const { return false; }
};

}  // namespace dlio::internal
