// parquet: the Parquet format of MLPerf Storage v3.0's flux and dlrm workloads (the MLCommons DLIO fork's
// parquet_generator.py and parquet_reader*.py), written and read by our own code from the Parquet format
// specification: Thrift compact-protocol metadata (third_party/parquet) and the page codecs of Debian's libraries.
//
// File (Generate): "PAR1", then samples_per_file rows in row groups of dataset.parquet.row_group_size rows (a group
// never spans two write batches of generation_batch_size rows), each group one column chunk per column in schema
// order, each chunk data pages v1 of whole rows (about 1 MiB of values each, at least one row): RLE repetition and
// definition levels, PLAIN values, the body compressed with dataset.compression (none, snappy, zstd, lz4 = LZ4_RAW,
// gzip). Columns are list<dtype> as pyarrow writes the fork's list columns (readers/parquet_internal.h), `size`
// values per row, floats in [0, 1), integers uniform; page and column-chunk statistics (min, max, null and NaN
// counts). Then the footer (FileMetaData: schema, row groups, created_by, column orders), its length, "PAR1".
//
// Reading (SampleReader, one per loader thread and epoch; never a StreamReader): a file's footer is read once per
// reader (the tail of the file: up to 64 KiB in one read, the rest of a longer footer in a second), and its row
// count must equal dataset.num_samples_per_file (FailedPrecondition otherwise: existing data of another layout).
// The selected columns are storage.storage_options.columns, else the columns with read: true (all of a foreign
// file's columns when none of its names is configured).
//  - read_mode row_group (parquet_reader.py): the first sample asked of a row group reads that group's selected
//    column chunks, one byte range each; its later samples read nothing.
//  - read_mode iterable (parquet_reader_file_iterable.py): the first sample asked of a file reads all its row
//    groups, each as one byte range from the first to the end of the last selected chunk.
// Ranges are read through the StorageReader (posix, odirect with the range widened to 4 KiB boundaries, io_uring
// with kUringDepth pieces in flight, s3 as ranged GETs) in pieces of at most 8 MiB (64 MiB over s3) into one
// buffer that only grows; bytes are counted as issued (odirect: the widened ranges). With dlio_ext.parquet_decode
// every data page of a selected chunk is decompressed into a scratch buffer (row_group mode only). A sample
// delivers its row's bytes of the selected columns (values x numpy item size) and counts one sample.
// Thread-safety: a reader belongs to one thread; the Format object is immutable and shareable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "readers/format.h"

namespace dlio {

// Options must have been validated (MakeFormat does it). Without parquet_columns, one column "data" of
// prod(sample_dims) values of element_type.
std::unique_ptr<Format> NewParquetFormat(const FormatOptions& options);

// What a file's footer says, for tests and tools: rows, row groups (rows each) and the top-level column names.
struct ParquetFileSummary {
  int64_t rows = 0;
  std::vector<int64_t> row_group_rows;
  std::vector<std::string> columns;
  std::string created_by;
};
// Reads the footer of a local file with plain reads (no accounting). Errors name the file.
absl::StatusOr<ParquetFileSummary> ReadParquetSummary(const std::string& path);

}  // namespace dlio
