#include "readers/format.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <set>
#include <string>
#include <vector>

#include "job/workload_spec.h"
#include "storage/io_util.h"
#include "readers/npz.h"
#include "storage/s3/client.h"
#include "readers/test_util.h"
#include "readers/tfrecord.h"

namespace dlio {
namespace {

FormatOptions Small() {
  FormatOptions o;
  o.samples_per_file = 3;
  o.sample_dims = {8, 8};
  return o;
}

TEST(MakeFormat, KnownNamesAndExtensions) {
  for (const std::string& name : FormatNames()) {
    auto f = MakeFormat(name, Small());
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ((*f)->name(), name);
    EXPECT_EQ((*f)->extension(), name) << "DLIO names files after the format";
    EXPECT_EQ((*f)->streaming(), name == "tfrecord");
    EXPECT_NE((*f)->NewSampleReader(), nullptr);
    EXPECT_EQ((*f)->NewStreamReader() != nullptr, (*f)->streaming());
  }
}

TEST(MakeFormat, UnknownNameListsAllowed) {
  auto f = MakeFormat("x", Small());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.status().message(),
            "dataset.format: unknown format 'x' (allowed: npz, hdf5, tfrecord, csv, npy, jpeg, png, indexed_binary, "
            "mmap_indexed_binary, parquet, synthetic)");
}

// The format library makes exactly the formats of the registry (job/format_traits.h), and each behaves as its
// row says: streaming, io engines other than posix, images.
TEST(MakeFormat, FactoriesAndBehaviourFollowTheRegistry) {
  std::set<std::string> factories;
  for (const auto& [name, make] : FormatFactories()) factories.insert(name);
  EXPECT_EQ(factories, std::set<std::string>(FormatNames().begin(), FormatNames().end()));
  for (const FormatTraits& t : Formats()) {
    auto f = MakeFormat(t.name, Small());
    ASSERT_TRUE(f.ok()) << t.name << ": " << f.status();
    EXPECT_EQ((*f)->streaming(), t.streams) << t.name;
    FormatOptions o = Small();
    o.io_engine = IoEngine::kODirect;
    EXPECT_EQ(MakeFormat(t.name, o).ok(), t.io_engines) << t.name;
    o = Small();
    o.sample_dims = {8, 8, 3};  // images are 2-D
    EXPECT_EQ(MakeFormat(t.name, o).ok(), !t.image) << t.name;
  }
}

TEST(MakeFormat, RejectsOptionsItCannotHonour) {
  auto rejected = [](const std::string& name, FormatOptions o) {
    auto f = MakeFormat(name, o);
    return !f.ok() && f.status().code() == absl::StatusCode::kInvalidArgument;
  };
  FormatOptions o = Small();
  o.samples_per_file = 0;
  EXPECT_TRUE(rejected("npz", o));
  o = Small();
  o.sample_dims = {};
  EXPECT_TRUE(rejected("tfrecord", o));
  o.sample_dims = {8, 0};
  EXPECT_TRUE(rejected("hdf5", o));
  o = Small();
  o.transfer_size = 0;
  EXPECT_TRUE(rejected("tfrecord", o));
  o = Small();
  o.compression = "bz2";  // a DLIO csv compression, no HDF5 filter
  EXPECT_TRUE(rejected("hdf5", o));
  EXPECT_TRUE(rejected("npz", o));
  EXPECT_FALSE(rejected("tfrecord", o));  // DLIO ignores compression for tfrecord
  for (const char* c : {"gzip", "szip", "lzf"}) {
    o.compression = c;
    EXPECT_FALSE(rejected("hdf5", o)) << c;
  }
  o.compression = "zip";
  EXPECT_FALSE(rejected("npz", o));
  o = Small();
  o.hdf5_chunk_dims = {1, 8};  // wrong rank
  EXPECT_TRUE(rejected("hdf5", o));
  o.hdf5_chunk_dims = {1, 8, 9};  // larger than the sample
  EXPECT_TRUE(rejected("hdf5", o));
  o.hdf5_chunk_dims = {4, 8, 8};  // larger than samples_per_file
  EXPECT_TRUE(rejected("hdf5", o));
  o.hdf5_chunk_dims = {1, 4, 8};
  EXPECT_FALSE(rejected("hdf5", o));
  o.hdf5_max_shape = {16, 16};
  o.hdf5_chunk_dims = {1, 16, 16};  // within the maximum shape
  EXPECT_FALSE(rejected("hdf5", o));
  o.hdf5_max_shape = {4, 16};  // smaller than the sample
  EXPECT_TRUE(rejected("hdf5", o));
  o.hdf5_max_shape = {16};  // wrong rank
  EXPECT_TRUE(rejected("hdf5", o));
  o = Small();
  o.hdf5_num_dset_per_record = 3;  // does not divide 8
  EXPECT_TRUE(rejected("hdf5", o));
  o.hdf5_num_dset_per_record = 4;
  EXPECT_FALSE(rejected("hdf5", o));
  o = Small();
  o.element_type = "float128";
  EXPECT_TRUE(rejected("npy", o));
  o.element_type = "float16";
  EXPECT_FALSE(rejected("npy", o));
  EXPECT_TRUE(rejected("jpeg", o)) << "images are uint8";
  o = Small();
  o.sample_dims = {4, 4, 4};
  EXPECT_TRUE(rejected("png", o)) << "images are 2-D";
  EXPECT_FALSE(rejected("csv", o));
}

// The refusal of a format that cannot read objects is one rule: the format library gives the line loading gives.
TEST(MakeFormat, RefusesMmapIndexedBinaryOverObjectsWithTheLoadersLine) {
  FormatOptions o = Small();
  o.io_engine = IoEngine::kS3;
  o.s3 = std::make_shared<S3Config>();
  absl::StatusOr<std::unique_ptr<Format>> f = MakeFormat("mmap_indexed_binary", o);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status(), CheckFormatReadsObjects("mmap_indexed_binary"));
  EXPECT_FALSE(CheckFormatReadsObjects("mmap_indexed_binary").ok());
  EXPECT_TRUE(MakeFormat("indexed_binary", o).ok());
}

TEST(Hdf5RecordDims, SplitsTheFirstAxisAndDropsALeadingOne) {
  EXPECT_EQ(Hdf5RecordDims({64, 64}, 1), (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(Hdf5RecordDims({6, 5, 4}, 3), (std::vector<int64_t>{2, 5, 4}));
  EXPECT_EQ(Hdf5RecordDims({3, 5, 4}, 3), (std::vector<int64_t>{5, 4}));  // DLIO's test: (1, *dims) -> dims
  EXPECT_EQ(Hdf5RecordDims({1, 7}, 1), (std::vector<int64_t>{7}));
}

// Values from h5py 3.7's guess_chunk (python3-h5py: h5py._hl.filters.guess_chunk(shape, None, itemsize)).
TEST(H5pyGuessChunk, MatchesH5py) {
  EXPECT_EQ(H5pyGuessChunk({2, 8, 8}, 1), (std::vector<int64_t>{2, 8, 8}));
  EXPECT_EQ(H5pyGuessChunk({3, 128, 128}, 1), (std::vector<int64_t>{2, 64, 64}));
  EXPECT_EQ(H5pyGuessChunk({100, 1024, 1024}, 4), (std::vector<int64_t>{7, 64, 64}));
  EXPECT_EQ(H5pyGuessChunk({5, 64, 48}, 2), (std::vector<int64_t>{3, 32, 48}));
}

TEST(DataFileName, PadsIndexToDigitsOfTotal) {
  EXPECT_EQ(DataFileName("img", 0, 4, "npz"), "img_0_of_4.npz");
  EXPECT_EQ(DataFileName("img", 0, 12, "hdf5"), "img_00_of_12.hdf5");
  EXPECT_EQ(DataFileName("img", 11, 12, "hdf5"), "img_11_of_12.hdf5");
  EXPECT_EQ(DataFileName("img", 7, 1024, "tfrecord"), "img_0007_of_1024.tfrecord");
  EXPECT_EQ(DataFileName("img", 0, 10, "npz"), "img_00_of_10.npz");  // len(str(10)) == 2
}

TEST(DataFileRelPath, RoundRobinSubfolders) {
  EXPECT_EQ(DataFileRelPath("train", "img", 3, 4, 0, "npz"), "train/img_3_of_4.npz");
  EXPECT_EQ(DataFileRelPath("train", "img", 3, 4, 1, "npz"), "train/img_3_of_4.npz");  // 1 subfolder = none
  EXPECT_EQ(DataFileRelPath("train", "img", 5, 12, 3, "npz"), "train/2/img_05_of_12.npz");
  EXPECT_EQ(DataFileRelPath("valid", "img", 11, 100, 10, "hdf5"), "valid/01/img_011_of_100.hdf5");
}

TEST(NpyHeader, MatchesNumpyLayout) {
  // DLIO's 64x64x2 files (MANIFEST: npy_header_len=128) and numpy 1.24's text for it.
  const std::string h = NpyHeader("|u1", {64, 64, 2});
  ASSERT_EQ(h.size(), 128u);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<unsigned char>(h[8]) | (static_cast<unsigned char>(h[9]) << 8), 118);
  EXPECT_EQ(h.substr(10, 64), "{'descr': '|u1', 'fortran_order': False, 'shape': (64, 64, 2), }");
  EXPECT_EQ(h.back(), '\n');
  EXPECT_EQ(NpyHeader("<i8", {2}).size(), 128u);
  EXPECT_NE(NpyHeader("<i8", {2}).find("'shape': (2,), }"), std::string::npos);
  for (int64_t d : {1, 9, 100, 4096, 123456789}) EXPECT_EQ(NpyHeader("|u1", {d, d, 7}).size() % 64, 0u) << d;
}

// zlib_crc32.cc replaces zlib's crc32() for the process (libzip's member CRCs); it must give libz.so's own results,
// alone and chained.
TEST(ZlibCrc32, IsalBehindZlibsApiGivesZlibsResults) {
  void* z = ::dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(z, nullptr) << ::dlerror();
  using Fn = uLong (*)(uLong, const Bytef*, uInt);
  auto zlib_crc32 = reinterpret_cast<Fn>(::dlsym(z, "crc32"));
  ASSERT_NE(zlib_crc32, nullptr);
  ASSERT_NE(reinterpret_cast<void*>(zlib_crc32), reinterpret_cast<void*>(&crc32)) << "crc32 is not interposed";
  std::vector<uint8_t> buf(100003);
  internal::Rng(5).Fill(buf.data(), buf.size());
  for (uInt len : {0u, 1u, 7u, 64u, 4095u, 100003u}) {
    EXPECT_EQ(crc32(0, buf.data(), len), zlib_crc32(0, buf.data(), len)) << len;
  }
  EXPECT_EQ(crc32(crc32(0, buf.data(), 333), buf.data() + 333, 999), zlib_crc32(0, buf.data(), 1332));
  EXPECT_EQ(crc32_z(0, buf.data(), buf.size()), zlib_crc32(0, buf.data(), static_cast<uInt>(buf.size())));
  EXPECT_EQ(crc32(0, nullptr, 0), zlib_crc32(0, nullptr, 0));
  EXPECT_EQ(crc32(0, reinterpret_cast<const Bytef*>("123456789"), 9), 0xCBF43926u);  // the CRC-32 check value
  ::dlclose(z);
}

TEST(Crc32c, KnownVector) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(Crc32c("", 0), 0u);
}

}  // namespace
}  // namespace dlio

