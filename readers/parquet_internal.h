// parquet internals (readers/parquet*.cc only): the physical layout of a column as the writer lays it out, the
// page codecs, and Thrift compact-protocol (de)serialisation of the metadata structs generated from
// third_party/parquet/parquet_subset.thrift.
//
// Contract:
//  - Columns are written as pyarrow writes the fork's list columns: `optional group <name> (LIST) { repeated group
//    list { optional <type> element } }`, so every value has repetition level 0 (a row's first) or 1 and definition
//    level 3 (present); physical types: INT32 for 8/16/32-bit integers (INT(bits, signed) logical type), INT64,
//    FLOAT, DOUBLE, FIXED_LEN_BYTE_ARRAY(2) with the FLOAT16 logical type.
//  - Compress()/Decompress(): the page body codecs by Parquet codec id: UNCOMPRESSED, SNAPPY (raw snappy), GZIP
//    (zlib, gzip wrapper), LZ4_RAW (lz4 block format; pyarrow writes it for 'lz4'), ZSTD. Errors name the codec.
//  - Serialize()/Deserialize(): TCompactProtocol over a TMemoryBuffer; Deserialize reads one struct from the start
//    of [p, p+n) and returns the bytes it used, or an error when the bytes end first or are not a valid struct.
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "job/parquet_spec.h"
#include "parquet/parquet_subset_types.h"

namespace dlio::parquet_internal {

namespace pf = ::dlio::parquet_format;

// The physical layout of one column of ours.
struct PhysicalColumn {
  std::string name;
  std::string dtype;                // numpy name
  int64_t size = 1;                 // values per row
  size_t mem_bytes = 1;             // numpy item size: a sample's bytes of this column are size * mem_bytes
  size_t file_bytes = 1;            // bytes per value in a PLAIN page (int8 is 4: INT32)
  pf::Type::type type = pf::Type::INT32;
  int32_t type_length = 0;          // FIXED_LEN_BYTE_ARRAY only
  char kind = 'f';                  // 'u', 'i' or 'f' (numpy kind)
};

PhysicalColumn PhysicalOf(const ParquetColumn& c);
// The schema of a file of these columns, root first (FileMetaData.schema).
std::vector<pf::SchemaElement> SchemaOf(const std::vector<PhysicalColumn>& cols);

// dataset.compression name <-> Parquet codec id.
pf::CompressionCodec::type CodecOf(const std::string& compression);
const char* CodecName(pf::CompressionCodec::type c);

// Appends the compressed form of [p, p+n) to `out` (cleared first).
absl::Status Compress(pf::CompressionCodec::type codec, const uint8_t* p, size_t n, std::string& out);
// Decompresses [p, p+n) into out[0, want) (`out` holds at least `want` bytes); the result must be exactly `want`.
absl::Status Decompress(pf::CompressionCodec::type codec, const uint8_t* p, size_t n, uint8_t* out, size_t want);

template <typename T>
std::string Serialize(const T& obj);
template <typename T>
absl::StatusOr<uint32_t> Deserialize(const uint8_t* p, size_t n, T* obj);

}  // namespace dlio::parquet_internal

namespace dlio {
struct FormatOptions;
class IoStats;
}  // namespace dlio

namespace dlio::parquet_internal {

// Data page size the writer aims at (pyarrow's data_page_size default, 1 MiB): a page holds as many whole rows as
// fit, at least one.
inline constexpr size_t kPageBytes = size_t{1} << 20;

// Writes the whole file (parquet_write.cc): options.samples_per_file rows of options.parquet_columns, row groups of
// parquet.row_group_size rows inside write batches of parquet.generation_batch_size, pages compressed with
// dataset.compression. Accounts the writes (FileWriter) and the rows (AddSamples).
absl::Status WriteParquetFile(const FormatOptions& o, const std::string& path, uint64_t seed, IoStats& stats);

}  // namespace dlio::parquet_internal
