// ParquetSpec: what a job says about its Parquet files (dataset.format: parquet), the keys of the MLCommons DLIO
// fork (its parquet_generator.py and parquet_reader*.py; docs/workloads.md "Parquet"): the columns of a row, the
// row-group layout, the read mode, the columns a reader selects, and whether pages are decoded.
//
// Contract:
//  - columns: dataset.parquet.columns, in file order. Each is `size` values of `dtype` per row (a numpy name, as
//    the fork's list columns: list<float32> of 524,328 values for flux's t5_encodings), and `read` says whether a
//    reader selects it (the fork's per-column flag). Empty = one column "data" of record_length_bytes bytes per row
//    in record_element_type (the fork's column without a schema); record_length_bytes must then be a multiple of
//    the element size (CheckParquet).
//  - read_columns: storage.storage_options.columns (the fork's iterable readers); empty = the `read` columns.
//  - row_group_size: rows per row group (pyarrow's default 1,048,576, so most files are one group);
//    generation_batch_size: rows generated per write batch, and a row group never spans two batches (as
//    pyarrow.ParquetWriter.write_table() per batch); 0 = all of a file's rows in one batch (the fork's write_table).
//  - read_mode: "row_group" (random access by sample, parquet_reader.py) or "iterable" (parquet_reader_file_
//    iterable.py: a file's row groups are read whole, one byte range each, when its first sample is asked).
//  - decode: dlio_ext.parquet_decode; false = the pages are read, not decompressed (the fork's iterable readers).
// Thread-safety: a value type; CheckParquet() and the helpers are pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace dlio {

struct WorkloadSpec;

struct ParquetColumn {
  std::string name;
  std::string dtype = "float32";  // the fork's default
  int64_t size = 1;               // values per row
  bool read = true;
  bool operator==(const ParquetColumn& o) const {
    return name == o.name && dtype == o.dtype && size == o.size && read == o.read;
  }
  bool operator!=(const ParquetColumn& o) const { return !(*this == o); }
};

struct ParquetSpec {
  std::vector<ParquetColumn> columns;                 // dataset.parquet.columns
  int64_t row_group_size = 1048576;                   // dataset.parquet.row_group_size (pyarrow's default)
  int64_t generation_batch_size = 0;                  // dataset.parquet.generation_batch_size; 0 = whole file
  std::string read_mode = "row_group";                // dataset.parquet.read_mode: row_group | iterable
  std::vector<std::string> read_columns;              // storage.storage_options.columns; empty = the read ones
  bool decode = false;                                // dlio_ext.parquet_decode
  bool operator==(const ParquetSpec& o) const {
    return columns == o.columns && row_group_size == o.row_group_size &&
           generation_batch_size == o.generation_batch_size && read_mode == o.read_mode &&
           read_columns == o.read_columns && decode == o.decode;
  }
  bool operator!=(const ParquetSpec& o) const { return !(*this == o); }
};

// The read modes, in the order the docs list them.
const std::vector<std::string>& ParquetReadModes();
// The element types a column may have (numpy names; Parquet stores the 8- and 16-bit integers as INT32, float16
// as FIXED_LEN_BYTE_ARRAY(2) with the FLOAT16 logical type).
const std::vector<std::string>& ParquetColumnTypes();

// The columns of a file: spec.parquet.columns, or the one column "data" the fork writes without a schema
// (record_length_bytes / element size values of record_element_type; at least one).
std::vector<ParquetColumn> ParquetFileColumns(const WorkloadSpec& spec);

// The parquet keys against the rest of the job (format parquet only; other formats ignore them): the columns
// storage.storage_options.columns names exist, at least one column is read, record_length_bytes is a whole number
// of elements when no columns are given, decoding only in row_group mode. One line naming the key (InvalidArgument).
absl::Status CheckParquet(const WorkloadSpec& spec);

}  // namespace dlio
