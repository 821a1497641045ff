#include "readers/hdf5.h"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "readers/format.h"
#include "readers/test_util.h"

namespace dlio {
namespace {

using testing::TempDir;

std::unique_ptr<Format> Hdf5(int64_t nspf, std::vector<int64_t> dims, std::vector<int64_t> chunks = {},
                             const std::string& compression = "none") {
  FormatOptions o;
  o.samples_per_file = nspf;
  o.sample_dims = std::move(dims);
  o.hdf5_chunk_dims = std::move(chunks);
  o.compression = compression;
  o.compression_level = 4;
  auto f = MakeFormat("hdf5", o);
  EXPECT_TRUE(f.ok()) << f.status();
  return std::move(*f);
}

// What the file holds, read with plain libhdf5 calls (independent of the reader).
struct Inspected {
  unsigned superblock = 0;
  std::vector<hsize_t> dims, chunks, label_dims;
  bool deflate = false;
  std::vector<uint8_t> records;
  std::vector<int64_t> labels;
};

Inspected Inspect(const std::string& path) {
  Inspected in;
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0) << path;
  if (f < 0) return in;
  H5F_info2_t info;
  H5Fget_info2(f, &info);
  in.superblock = info.super.version;
  hid_t d = H5Dopen2(f, "records_0", H5P_DEFAULT);
  hid_t s = H5Dget_space(d);
  in.dims.resize(static_cast<size_t>(H5Sget_simple_extent_ndims(s)));
  H5Sget_simple_extent_dims(s, in.dims.data(), nullptr);
  hid_t dcpl = H5Dget_create_plist(d);
  if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
    in.chunks.resize(in.dims.size());
    H5Pget_chunk(dcpl, static_cast<int>(in.chunks.size()), in.chunks.data());
  }
  for (int i = 0; i < H5Pget_nfilters(dcpl); ++i) {
    unsigned flags;
    size_t n = 0;
    if (H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &n, nullptr, 0, nullptr, nullptr) ==
        H5Z_FILTER_DEFLATE) {
      in.deflate = true;
    }
  }
  hsize_t total = 1;
  for (hsize_t v : in.dims) total *= v;
  in.records.resize(total);
  EXPECT_GE(H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, in.records.data()), 0);
  H5Pclose(dcpl);
  H5Sclose(s);
  H5Dclose(d);
  hid_t l = H5Dopen2(f, "labels", H5P_DEFAULT);
  hid_t ls = H5Dget_space(l);
  hid_t lt = H5Dget_type(l);
  EXPECT_TRUE(H5Tequal(lt, H5T_STD_I64LE) > 0) << path;
  in.label_dims.resize(1);
  H5Sget_simple_extent_dims(ls, in.label_dims.data(), nullptr);
  in.labels.resize(in.label_dims[0]);
  H5Dread(l, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, in.labels.data());
  H5Tclose(lt);
  H5Sclose(ls);
  H5Dclose(l);
  H5Fclose(f);
  return in;
}

void RoundTrip(const Format& f, int64_t nspf, hsize_t d1, hsize_t d2) {
  TempDir dir;
  const std::string path = dir.File("img_0_of_1.hdf5");
  IoStats gen;
  ASSERT_TRUE(f.Generate(path, 5, gen).ok());
  IoSnapshot g = gen.Snapshot();
  EXPECT_EQ(g.bytes, testing::FileSize(path)) << "the file image is written by our own accounted pwrite()s";
  EXPECT_EQ(g.files, 1u);
  EXPECT_EQ(g.samples, static_cast<uint64_t>(nspf));

  Inspected in = Inspect(path);
  EXPECT_EQ(in.superblock, 3u) << "libver latest, as h5py libver='latest'";
  EXPECT_EQ(in.dims, (std::vector<hsize_t>{static_cast<hsize_t>(nspf), d1, d2}));
  EXPECT_EQ(in.label_dims, std::vector<hsize_t>{static_cast<hsize_t>(nspf)});
  EXPECT_EQ(in.labels, std::vector<int64_t>(static_cast<size_t>(nspf), 0));

  auto r = f.NewSampleReader();
  IoStats st;
  testing::ProcessReads reads;
  for (uint32_t i = 0; i < nspf; ++i) {
    IoSnapshot before = st.Snapshot();
    const uint64_t read_before = reads.ReadBytes();
    auto n = r->ReadSample(path, i, st);
    const uint64_t read_after = reads.ReadBytes();
    ASSERT_TRUE(n.ok()) << n.status();
    ASSERT_EQ(*n, d1 * d2);
    IoSnapshot after = st.Snapshot();
    // Every read libhdf5 made (metadata and data) is counted, and nothing else: the process's read syscalls.
    EXPECT_EQ(after.bytes - before.bytes, read_after - read_before) << "sample " << i;
    EXPECT_GE(after.bytes - before.bytes, d1 * d2) << "the payload and libhdf5's metadata";
    EXPECT_GT(after.ops - before.ops, 1u) << "superblock, object headers, data: several reads";
    EXPECT_EQ(after.files - before.files, 1u) << "on_demand: the file is opened for every sample";
    std::string_view s = r->last_sample();
    ASSERT_EQ(s.size(), d1 * d2);
    EXPECT_EQ(std::string(s), std::string(reinterpret_cast<const char*>(in.records.data()) + i * d1 * d2, d1 * d2))
        << "sample " << i;
  }
  auto oob = r->ReadSample(path, static_cast<uint32_t>(nspf), st);
  EXPECT_EQ(oob.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(std::string(oob.status().message()).find(path), std::string::npos);
}

TEST(Hdf5, RoundTripContiguous) {
  auto f = Hdf5(3, {16, 24});
  RoundTrip(*f, 3, 16, 24);
}

TEST(Hdf5, RoundTripChunkedGzip) {
  auto f = Hdf5(5, {64, 48}, {1, 32, 16}, "gzip");
  RoundTrip(*f, 5, 64, 48);
  TempDir dir;
  IoStats st;
  ASSERT_TRUE(f->Generate(dir.File("c.hdf5"), 1, st).ok());
  Inspected in = Inspect(dir.File("c.hdf5"));
  EXPECT_EQ(in.chunks, (std::vector<hsize_t>{1, 32, 16}));
  EXPECT_TRUE(in.deflate);
}

TEST(Hdf5, GzipWithoutChunkDimsTakesH5pysGuess) {
  auto f = Hdf5(2, {8, 8}, {}, "gzip");
  TempDir dir;
  IoStats st;
  ASSERT_TRUE(f->Generate(dir.File("g.hdf5"), 1, st).ok());
  Inspected in = Inspect(dir.File("g.hdf5"));
  EXPECT_EQ(in.chunks, (std::vector<hsize_t>{2, 8, 8})) << "h5py's guess_chunk((2, 8, 8), None, 1)";
  EXPECT_TRUE(in.deflate);
}

TEST(Hdf5, GenerateIsReproducible) {
  auto f = Hdf5(2, {8, 8}, {1, 4, 4}, "gzip");
  TempDir dir;
  IoStats st;
  ASSERT_TRUE(f->Generate(dir.File("a.hdf5"), 9, st).ok());
  ASSERT_TRUE(f->Generate(dir.File("b.hdf5"), 9, st).ok());
  ASSERT_TRUE(f->Generate(dir.File("c.hdf5"), 10, st).ok());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(slurp(dir.File("a.hdf5")), slurp(dir.File("b.hdf5")));
  EXPECT_NE(slurp(dir.File("a.hdf5")), slurp(dir.File("c.hdf5")));
}

void CheckDlioCase(const std::string& name, uint64_t sample_bytes) {
  const std::string dir = testing::DlioCase(name);
  auto files = testing::ReadManifest(dir);
  ASSERT_EQ(files.size(), 4u) << dir;
  auto f = Hdf5(1, {1});  // the reader takes shapes and types from the files
  auto r = f->NewSampleReader();
  int checked = 0;
  for (const auto& mf : files) {
    const std::string path = dir + "/" + mf.path;
    ASSERT_EQ(testing::FileSize(path), mf.size) << path;
    ASSERT_EQ(mf.samples.size(), 3u) << path;
    for (const auto& ms : mf.samples) {
      IoStats st;
      testing::ProcessReads reads;
      const uint64_t read_before = reads.ReadBytes();
      auto n = r->ReadSample(path, ms.index, st);
      const uint64_t read_after = reads.ReadBytes();
      ASSERT_TRUE(n.ok()) << n.status();
      EXPECT_EQ(*n, ms.nbytes);
      EXPECT_EQ(ms.nbytes, sample_bytes);
      EXPECT_EQ(st.Snapshot().bytes, read_after - read_before) << "every read of DLIO's file, metadata included";
      std::string_view s = r->last_sample();
      EXPECT_EQ(testing::ByteSum(s), ms.sum) << path << " sample " << ms.index;
      ASSERT_EQ(ms.head.size(), 4u);
      for (size_t k = 0; k < 4; ++k) {
        EXPECT_EQ(static_cast<unsigned char>(s[k]), ms.head[k]) << path << " sample " << ms.index << " head " << k;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 12);
}

TEST(Hdf5, ReadsDlioGeneratedContiguous) { CheckDlioCase("hdf5", 64 * 64); }
TEST(Hdf5, ReadsDlioGeneratedChunkedGzip) { CheckDlioCase("hdf5_chunked_gzip", 128 * 128); }

TEST(Hdf5, ErrorsNameTheFile) {
  TempDir dir;
  auto f = Hdf5(2, {8, 8});
  auto r = f->NewSampleReader();
  IoStats st;
  auto missing = r->ReadSample(dir.File("nope.hdf5"), 0, st);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(missing.status().message()).find(dir.File("nope.hdf5")), std::string::npos);

  const std::string junk = dir.File("junk.hdf5");
  std::ofstream(junk) << "not an HDF5 file";
  auto bad = r->ReadSample(junk, 0, st);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find(junk), std::string::npos);
  EXPECT_EQ(st.Snapshot().files, 1u) << "the junk file was opened (and its first bytes read), the missing one not";

  auto gen = f->Generate(dir.path() + "/no/such/dir/x.hdf5", 1, st);
  EXPECT_FALSE(gen.ok());
  EXPECT_NE(std::string(gen.message()).find("/no/such/dir/x.hdf5"), std::string::npos);
}

// Runs tests/python/check_npz_hdf5.py (numpy + h5py, the libraries DLIO reads with) over generated files.
int RunPythonCheck(const std::string& args) {
  const std::string cmd = std::string("/usr/bin/python3 ") + DLIO_SOURCE_DIR + "/tests/python/check_npz_hdf5.py " +
                          args + " >&2";
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(PythonCrossCheck, NumpyAndH5pyReadGeneratedFiles) {
  if (std::system("/usr/bin/python3 -c 'import numpy, h5py' 2>/dev/null") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 lacks numpy or h5py (Debian python3-numpy python3-h5py)";
  }
  TempDir dir;
  IoStats st;
  FormatOptions o;
  o.samples_per_file = 3;
  o.sample_dims = {20, 20};
  for (int i = 0; i < 2; ++i) {
    auto npz = MakeFormat("npz", o);
    ASSERT_TRUE(npz.ok());
    ASSERT_TRUE((*npz)->Generate(dir.File(DataFileName("img", i, 2, "npz")), i, st).ok());
  }
  auto plain = MakeFormat("hdf5", o);
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE((*plain)->Generate(dir.File("img_0_of_2.hdf5"), 1, st).ok());
  o.hdf5_chunk_dims = {1, 10, 10};
  o.compression = "gzip";
  auto chunked = MakeFormat("hdf5", o);
  ASSERT_TRUE(chunked.ok());
  ASSERT_TRUE((*chunked)->Generate(dir.File("img_1_of_2.hdf5"), 2, st).ok());

  EXPECT_EQ(RunPythonCheck(dir.path() + " --dims 20,20 --samples 3"), 0);
  EXPECT_EQ(RunPythonCheck(dir.path()), 0);
  // The checker can fail: the same files against the wrong expectation.
  EXPECT_EQ(RunPythonCheck(dir.path() + " --samples 4"), 1);
  EXPECT_EQ(RunPythonCheck(dir.path() + " --dims 20,21"), 1);
}

TEST(PythonCrossCheck, AcceptsDlioGeneratedFiles) {
  if (std::system("/usr/bin/python3 -c 'import numpy, h5py' 2>/dev/null") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 lacks numpy or h5py";
  }
  EXPECT_EQ(RunPythonCheck(testing::DlioCase("npz") + " --dims 64,64 --samples 2"), 0);
  EXPECT_EQ(RunPythonCheck(testing::DlioCase("hdf5") + " --dims 64,64 --samples 3"), 0);
  EXPECT_EQ(RunPythonCheck(testing::DlioCase("hdf5_chunked_gzip") + " --dims 128,128 --samples 3"), 0);
}

}  // namespace
}  // namespace dlio

namespace dlio {
namespace {

// num_dset_per_record: records_0..k-1 each hold a 1/k slice of every sample; the reader reads sample i of each
// (k H5Dreads, k ops) and returns the k slices back to back. Element types and lzf/szip filters survive the trip.
TEST(Hdf5, SplitRecordsTypesAndFiltersRoundTrip) {
  for (const char* comp : {"none", "gzip", "szip", "lzf"}) {
    for (const char* type : {"uint8", "float16", "int64"}) {
      FormatOptions o;
      o.samples_per_file = 3;
      o.sample_dims = {6, 10};
      o.element_type = type;
      o.hdf5_num_dset_per_record = 2;
      o.compression = comp;
      auto f = MakeFormat("hdf5", o);
      ASSERT_TRUE(f.ok()) << f.status();
      testing::TempDir dir;
      const std::string path = dir.File("s.hdf5");
      IoStats gen;
      ASSERT_TRUE((*f)->Generate(path, 8, gen).ok()) << comp << " " << type;
      const uint64_t item = ElementSize(type), half = 3 * 10 * item;
      // What the two datasets hold, read with plain libhdf5 (no type conversion: the file's own type).
      std::vector<std::string> data;
      hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      ASSERT_GE(file, 0);
      for (const char* name : {"records_0", "records_1"}) {
        hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
        ASSERT_GE(d, 0) << name;
        hid_t t = H5Dget_type(d);
        EXPECT_EQ(H5Tget_size(t), item);
        std::string all(3 * half, '\0');
        EXPECT_GE(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()), 0) << comp;
        data.push_back(all);
        H5Tclose(t);
        H5Dclose(d);
      }
      H5Fclose(file);
      auto r = (*f)->NewSampleReader();
      IoStats st;
      for (uint32_t i = 0; i < 3; ++i) {
        auto n = r->ReadSample(path, i, st);
        ASSERT_TRUE(n.ok()) << n.status();
        EXPECT_EQ(*n, 2 * half);
        EXPECT_EQ(r->last_sample(), data[0].substr(i * half, half) + data[1].substr(i * half, half));
      }
      EXPECT_GE(st.Snapshot().bytes, 6 * half) << "both datasets' slices of every sample, and metadata";
      EXPECT_EQ(st.Snapshot().files, 3u);
    }
  }
}

}  // namespace
}  // namespace dlio
