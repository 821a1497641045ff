// parquet_internal.h: the physical layout of our columns, the page codecs and the Thrift (de)serialisation.
#include <lz4.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <thrift/protocol/TCompactProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "readers/dtype.h"
#include "readers/parquet_internal.h"

namespace dlio::parquet_internal {
namespace {

using apache::thrift::protocol::TCompactProtocolT;
using apache::thrift::transport::TMemoryBuffer;

// zlib's windowBits for a gzip wrapper (15 + 16), as Parquet's GZIP codec is (RFC 1952).
constexpr int kGzipWindowBits = 15 + 16;
// zstd level 1: pyarrow's default compression_level for zstd is 1 too.
constexpr int kZstdLevel = 1;

absl::Status CodecError(pf::CompressionCodec::type c, const char* what) {
  return absl::DataLossError(absl::StrCat("parquet ", CodecName(c), " ", what));
}

absl::Status Gzip(const uint8_t* p, size_t n, std::string& out) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return CodecError(pf::CompressionCodec::GZIP, "set-up failed");
  }
  out.resize(deflateBound(&z, n) + 32);
  z.next_in = const_cast<uint8_t*>(p);
  z.avail_in = static_cast<uInt>(n);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int r = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return r == Z_STREAM_END ? absl::OkStatus() : CodecError(pf::CompressionCodec::GZIP, "compression failed");
}

absl::Status Gunzip(const uint8_t* p, size_t n, uint8_t* out, size_t want) {
  z_stream z{};
  if (inflateInit2(&z, kGzipWindowBits) != Z_OK) return CodecError(pf::CompressionCodec::GZIP, "set-up failed");
  z.next_in = const_cast<uint8_t*>(p);
  z.avail_in = static_cast<uInt>(n);
  z.next_out = out;
  z.avail_out = static_cast<uInt>(want);
  const int r = inflate(&z, Z_FINISH);
  const size_t got = z.total_out;
  inflateEnd(&z);
  if (r != Z_STREAM_END || got != want) return CodecError(pf::CompressionCodec::GZIP, "page does not inflate");
  return absl::OkStatus();
}

}  // namespace

PhysicalColumn PhysicalOf(const ParquetColumn& c) {
  PhysicalColumn p;
  p.name = c.name;
  p.dtype = c.dtype;
  p.size = c.size;
  const internal::DType* t = internal::FindDType(c.dtype);
  p.mem_bytes = t != nullptr ? t->itemsize : 4;
  p.kind = t != nullptr ? t->kind : 'f';
  if (p.kind == 'f') {
    p.type = p.mem_bytes == 8 ? pf::Type::DOUBLE : p.mem_bytes == 4 ? pf::Type::FLOAT : pf::Type::FIXED_LEN_BYTE_ARRAY;
    p.type_length = p.mem_bytes == 2 ? 2 : 0;
    p.file_bytes = p.mem_bytes;
  } else {
    p.type = p.mem_bytes == 8 ? pf::Type::INT64 : pf::Type::INT32;
    p.file_bytes = p.mem_bytes == 8 ? 8 : 4;
  }
  return p;
}

std::vector<pf::SchemaElement> SchemaOf(const std::vector<PhysicalColumn>& cols) {
  std::vector<pf::SchemaElement> s;
  pf::SchemaElement root;
  root.__set_name("schema");
  root.__set_num_children(static_cast<int32_t>(cols.size()));
  s.push_back(root);
  for (const PhysicalColumn& c : cols) {
    pf::SchemaElement group, list, leaf;
    group.__set_name(c.name);
    group.__set_repetition_type(pf::FieldRepetitionType::OPTIONAL);
    group.__set_num_children(1);
    group.__set_converted_type(pf::ConvertedType::LIST);
    pf::LogicalType lt;
    lt.__set_LIST(pf::ListType());
    group.__set_logicalType(lt);
    list.__set_name("list");
    list.__set_repetition_type(pf::FieldRepetitionType::REPEATED);
    list.__set_num_children(1);
    leaf.__set_name("element");
    leaf.__set_repetition_type(pf::FieldRepetitionType::OPTIONAL);
    leaf.__set_type(c.type);
    if (c.type == pf::Type::FIXED_LEN_BYTE_ARRAY) {
      leaf.__set_type_length(c.type_length);
      pf::LogicalType f16;
      f16.__set_FLOAT16(pf::Float16Type());
      leaf.__set_logicalType(f16);
    } else if (c.kind != 'f') {
      const int bits = static_cast<int>(c.mem_bytes * 8);
      const bool is_signed = c.kind == 'i';
      pf::IntType it;
      it.__set_bitWidth(static_cast<int8_t>(bits));
      it.__set_isSigned(is_signed);
      pf::LogicalType li;
      li.__set_INTEGER(it);
      leaf.__set_logicalType(li);
      const int idx = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : 3;
      static constexpr pf::ConvertedType::type kSigned[] = {pf::ConvertedType::INT_8, pf::ConvertedType::INT_16,
                                                            pf::ConvertedType::INT_32, pf::ConvertedType::INT_64};
      static constexpr pf::ConvertedType::type kUnsigned[] = {pf::ConvertedType::UINT_8, pf::ConvertedType::UINT_16,
                                                              pf::ConvertedType::UINT_32, pf::ConvertedType::UINT_64};
      leaf.__set_converted_type(is_signed ? kSigned[idx] : kUnsigned[idx]);
    }
    s.push_back(group);
    s.push_back(list);
    s.push_back(leaf);
  }
  return s;
}

pf::CompressionCodec::type CodecOf(const std::string& compression) {
  if (compression == "snappy") return pf::CompressionCodec::SNAPPY;
  if (compression == "gzip") return pf::CompressionCodec::GZIP;
  if (compression == "zstd") return pf::CompressionCodec::ZSTD;
  if (compression == "lz4") return pf::CompressionCodec::LZ4_RAW;
  return pf::CompressionCodec::UNCOMPRESSED;
}

const char* CodecName(pf::CompressionCodec::type c) {
  switch (c) {
    case pf::CompressionCodec::UNCOMPRESSED: return "uncompressed";
    case pf::CompressionCodec::SNAPPY: return "snappy";
    case pf::CompressionCodec::GZIP: return "gzip";
    case pf::CompressionCodec::LZO: return "lzo";
    case pf::CompressionCodec::BROTLI: return "brotli";
    case pf::CompressionCodec::LZ4: return "lz4 (hadoop framing)";
    case pf::CompressionCodec::ZSTD: return "zstd";
    case pf::CompressionCodec::LZ4_RAW: return "lz4_raw";
  }
  return "unknown codec";
}

absl::Status Compress(pf::CompressionCodec::type codec, const uint8_t* p, size_t n, std::string& out) {
  out.clear();
  switch (codec) {
    case pf::CompressionCodec::UNCOMPRESSED:
      out.assign(reinterpret_cast<const char*>(p), n);
      return absl::OkStatus();
    case pf::CompressionCodec::SNAPPY:
      snappy::Compress(reinterpret_cast<const char*>(p), n, &out);
      return absl::OkStatus();
    case pf::CompressionCodec::GZIP:
      return Gzip(p, n, out);
    case pf::CompressionCodec::ZSTD: {
      out.resize(ZSTD_compressBound(n));
      const size_t r = ZSTD_compress(out.data(), out.size(), p, n, kZstdLevel);
      if (ZSTD_isError(r)) return CodecError(codec, "compression failed");
      out.resize(r);
      return absl::OkStatus();
    }
    case pf::CompressionCodec::LZ4_RAW: {
      out.resize(static_cast<size_t>(LZ4_compressBound(static_cast<int>(n))));
      const int r = LZ4_compress_default(reinterpret_cast<const char*>(p), out.data(), static_cast<int>(n),
                                         static_cast<int>(out.size()));
      if (r <= 0) return CodecError(codec, "compression failed");
      out.resize(static_cast<size_t>(r));
      return absl::OkStatus();
    }
    default:
      return absl::UnimplementedError(absl::StrCat("parquet: writing ", CodecName(codec), " is not supported"));
  }
}

absl::Status Decompress(pf::CompressionCodec::type codec, const uint8_t* p, size_t n, uint8_t* out, size_t want) {
  switch (codec) {
    case pf::CompressionCodec::UNCOMPRESSED:
      if (n != want) return CodecError(codec, "page size differs from its uncompressed size");
      std::memcpy(out, p, n);
      return absl::OkStatus();
    case pf::CompressionCodec::SNAPPY: {
      size_t len = 0;
      if (!snappy::GetUncompressedLength(reinterpret_cast<const char*>(p), n, &len) || len != want ||
          !snappy::RawUncompress(reinterpret_cast<const char*>(p), n, reinterpret_cast<char*>(out))) {
        return CodecError(codec, "page does not decompress");
      }
      return absl::OkStatus();
    }
    case pf::CompressionCodec::GZIP:
      return Gunzip(p, n, out, want);
    case pf::CompressionCodec::ZSTD: {
      const size_t r = ZSTD_decompress(out, want, p, n);
      if (ZSTD_isError(r) || r != want) return CodecError(codec, "page does not decompress");
      return absl::OkStatus();
    }
    case pf::CompressionCodec::LZ4_RAW: {
      const int r = LZ4_decompress_safe(reinterpret_cast<const char*>(p), reinterpret_cast<char*>(out),
                                        static_cast<int>(n), static_cast<int>(want));
      if (r < 0 || static_cast<size_t>(r) != want) return CodecError(codec, "page does not decompress");
      return absl::OkStatus();
    }
    default:
      return absl::UnimplementedError(absl::StrCat("parquet: decoding ", CodecName(codec), " pages is not supported "
                                                   "(snappy, gzip, zstd, lz4_raw and uncompressed are)"));
  }
}

template <typename T>
std::string Serialize(const T& obj) {
  auto buf = std::make_shared<TMemoryBuffer>();
  TCompactProtocolT<TMemoryBuffer> proto(buf);
  obj.write(&proto);
  return buf->getBufferAsString();
}

template <typename T>
absl::StatusOr<uint32_t> Deserialize(const uint8_t* p, size_t n, T* obj) {
  try {
    auto buf = std::make_shared<TMemoryBuffer>(const_cast<uint8_t*>(p), static_cast<uint32_t>(n),
                                               TMemoryBuffer::OBSERVE);
    TCompactProtocolT<TMemoryBuffer> proto(buf);
    return obj->read(&proto);
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat("parquet metadata does not parse (", e.what(), ")"));
  }
}

template std::string Serialize(const pf::PageHeader&);
template std::string Serialize(const pf::FileMetaData&);
template absl::StatusOr<uint32_t> Deserialize(const uint8_t*, size_t, pf::PageHeader*);
template absl::StatusOr<uint32_t> Deserialize(const uint8_t*, size_t, pf::FileMetaData*);

}  // namespace dlio::parquet_internal
