// tfrecord: DLIO's TFRecord format (tf.io.TFRecordWriter of tf.train.Example) behind the Format interface.
//
// File: samples_per_file records, each framed as TFRecord frames them:
//   uint64 LE length | uint32 LE masked CRC32C of the 8 length bytes | data | uint32 LE masked CRC32C of data
// with mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8. Each record's data is a serialized tf.train.Example with the
// features DLIO's generator writes:
//   "image": bytes_list { value: <prod(sample_dims) random bytes> }
//   "size":  int64_list { value: <sample_dims[0]> }   -- DLIO stores its nominal dimension d (self._dimension),
//                                                         not the byte count
// The protobuf wire format is written by hand (no protobuf runtime): Example{1: Features{1: map<string, Feature>}},
// Feature{bytes_list = 1, int64_list = 3}, BytesList{repeated bytes value = 1}, Int64List{repeated int64 value = 1,
// packed}. CRC32C comes from ISA-L (crc32_iscsi). The image is prod(sample_dims) elements of the element type.
// With FormatOptions::tfrecord_index_dir set, Generate() also writes DLIO's DALI index file
// `<dir>/<data file name>.idx` (DLIO: data_folder/index/train/, flat even with subfolders): one line
// "<offset> <length>" per record, length = the whole frame (12 + data + 4), from the offsets it wrote (DLIO reads
// the finished file back to find them).
//
// Reading is streaming only (DLIO's TFReader: tf.data.TFRecordDataset(buffer_size = transfer_size)): the stream
// reader reads exactly transfer_size bytes per call (the last one of a file up to its end), sequentially, through
// the io_engine (storage.h; odirect rounds transfer_size up to 4 KiB; io_uring keeps kUringDepth transfers in
// flight) into a per-reader buffer of a few transfers that only grows; records may straddle reads and may be larger
// than transfer_size (the buffer grows to hold one whole record).
// Next() returns one record (Skip() reads one without counting it as a sample). No CRC is verified on the hot path
// (TF's reader does verify both CRCs; with ISA-L that would cost little, but it is left out so the reader measures
// I/O only); a length that runs past the end of the file is reported as DataLoss. NewSampleReader()'s reader answers
// Unimplemented.
//
// Thread-safety: a reader belongs to one thread; the Format object itself is immutable and shareable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "readers/format.h"

namespace dlio {

// Options must have been validated (MakeFormat does it).
std::unique_ptr<Format> NewTfrecordFormat(const FormatOptions& options);

// CRC32C (Castagnoli) of [p, p+n), via ISA-L, and TFRecord's mask of a CRC.
uint32_t Crc32c(const void* p, size_t n);
inline uint32_t MaskCrc32c(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

}  // namespace dlio
