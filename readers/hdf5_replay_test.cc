// The replay engine (hdf5_replay.h) against the libhdf5 engine: per sample the same requests reach the storage
// (open, offsets, lengths, order, close), counted the same, and the same bytes are delivered; on every layout the
// generator makes and on DLIO's own files; layouts without a provable plan stay with libhdf5.
#include "readers/hdf5_replay.h"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "readers/format.h"
#include "readers/hdf5_internal.h"
#include "readers/test_util.h"
#include "storage/hdf5_vfd.h"

namespace dlio {
namespace {

using hdf5_internal::DriverOf;
using hdf5_internal::ReplayCountersOf;

struct Sample {
  std::vector<Hdf5Io> issued;  // what reached the StorageReader
  IoSnapshot delta;            // counted
  std::string bytes;           // delivered
};

std::string Describe(const std::vector<Hdf5Io>& v) {
  std::string s;
  for (const Hdf5Io& io : v) {
    s += io.kind == Hdf5Io::Kind::kOpen ? "open " : io.kind == Hdf5Io::Kind::kClose ? "close " : "";
    if (io.kind == Hdf5Io::Kind::kRead) s += "(" + std::to_string(io.addr) + "," + std::to_string(io.size) + ") ";
  }
  return s;
}

// Reads `order` (path, sample) with one reader of the engine chosen by o.hdf5_replay.
std::vector<Sample> ReadAll(FormatOptions o, bool replay, const std::vector<std::pair<std::string, uint32_t>>& order,
                            hdf5_internal::ReplayCounters* counters = nullptr) {
  o.hdf5_replay = replay;
  auto f = MakeFormat("hdf5", o);
  EXPECT_TRUE(f.ok()) << f.status();
  auto r = (*f)->NewSampleReader();
  absl::StatusOr<Hdf5StorageAccess*> driver = DriverOf(*r);
  EXPECT_TRUE(driver.ok()) << driver.status();
  std::vector<Sample> out;
  IoStats st;
  for (const auto& [path, i] : order) {
    Sample s;
    s.issued.reserve(64);
    (*driver)->set_issued_log(&s.issued);
    const IoSnapshot before = st.Snapshot();
    auto n = r->ReadSample(path, i, st);
    EXPECT_TRUE(n.ok()) << n.status();
    const IoSnapshot after = st.Snapshot();
    s.delta.bytes = after.bytes - before.bytes;
    s.delta.ops = after.ops - before.ops;
    s.delta.files = after.files - before.files;
    s.bytes = std::string(r->last_sample());
    out.push_back(std::move(s));
  }
  (*driver)->set_issued_log(nullptr);
  if (counters != nullptr) *counters = ReplayCountersOf(*r);
  return out;
}

// Both engines over `order`: per sample equal requests, counts and bytes. Returns the replay engine's counters.
hdf5_internal::ReplayCounters CompareEngines(const FormatOptions& o,
                                             const std::vector<std::pair<std::string, uint32_t>>& order,
                                             const std::string& what) {
  hdf5_internal::ReplayCounters c;
  const std::vector<Sample> lib = ReadAll(o, false, order);
  const std::vector<Sample> rep = ReadAll(o, true, order, &c);
  EXPECT_EQ(lib.size(), rep.size());
  for (size_t n = 0; n < lib.size() && n < rep.size(); ++n) {
    const std::string at = what + ": " + order[n].first + " sample " + std::to_string(order[n].second);
    EXPECT_EQ(Describe(rep[n].issued), Describe(lib[n].issued)) << at;
    EXPECT_EQ(rep[n].delta.bytes, lib[n].delta.bytes) << at;
    EXPECT_EQ(rep[n].delta.ops, lib[n].delta.ops) << at;
    EXPECT_EQ(rep[n].delta.files, lib[n].delta.files) << at;
    EXPECT_EQ(rep[n].bytes, lib[n].bytes) << at;
    EXPECT_FALSE(lib[n].bytes.empty()) << at;
  }
  return c;
}

// Every sample of the files, files interleaved and samples out of order (a shuffled epoch), twice.
std::vector<std::pair<std::string, uint32_t>> Order(const std::vector<std::string>& files, uint32_t nspf) {
  std::vector<std::pair<std::string, uint32_t>> v;
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t s = 0; s < nspf; ++s) {
      const uint32_t i = (s * 7 + 3 + pass) % nspf;  // 7 is prime to every nspf used here
      for (const std::string& f : files) v.emplace_back(f, i);
    }
  }
  return v;
}

struct Case {
  const char* name;
  std::vector<int64_t> dims, chunks, max_shape;
  const char* compression = "none";
  const char* type = "uint8";
  int64_t datasets = 1;
  int64_t nspf = 6;
};

std::vector<Case> GeneratorLayouts() {
  return {
      {"contiguous, sieved", {16, 24}, {}, {}},
      {"contiguous, sample above the sieve buffer", {300, 300}, {}, {}, "none", "uint8", 1, 3},
      {"contiguous, 2 datasets per record, float16", {6, 10}, {}, {}, "none", "float16", 2},
      {"chunked", {64, 48}, {1, 32, 16}, {}},
      {"chunked, 2 samples per chunk, edge chunks", {20, 30}, {2, 8, 16}, {}, "none", "int64", 1, 7},
      {"gzip", {64, 48}, {1, 32, 16}, {}, "gzip"},
      {"gzip, h5py's guessed chunks", {40, 40}, {}, {}, "gzip", "float32"},
      {"gzip, 2 datasets per record", {8, 12}, {1, 2, 6}, {}, "gzip", "uint16", 2},
      {"lzf", {64, 48}, {1, 32, 16}, {}, "lzf"},
      {"szip", {64, 48}, {1, 32, 16}, {}, "szip", "int32"},
      {"resizable (max_shape)", {24, 24}, {}, {48, 64}},
      {"resizable, gzip", {24, 24}, {1, 12, 24}, {48, 24}, "gzip"},
  };
}

TEST(Hdf5Replay, SameReadsAsLibhdf5PerSampleOnEveryGeneratedLayout) {
  for (const Case& c : GeneratorLayouts()) {
    FormatOptions o;
    o.samples_per_file = c.nspf;
    o.sample_dims = c.dims;
    o.hdf5_chunk_dims = c.chunks;
    o.hdf5_max_shape = c.max_shape;
    o.compression = c.compression;
    o.element_type = c.type;
    o.hdf5_num_dset_per_record = c.datasets;
    auto f = MakeFormat("hdf5", o);
    ASSERT_TRUE(f.ok()) << c.name << ": " << f.status();
    testing::TempDir dir;
    std::vector<std::string> files = {dir.File("a.hdf5"), dir.File("b.hdf5")};
    IoStats gen;
    for (size_t n = 0; n < files.size(); ++n) ASSERT_TRUE((*f)->Generate(files[n], n + 1, gen).ok()) << c.name;
    const auto order = Order(files, static_cast<uint32_t>(c.nspf));
    const hdf5_internal::ReplayCounters rc = CompareEngines(o, order, c.name);
    EXPECT_EQ(rc.fallback, 0u) << c.name << ": " << rc.last_fallback;
    EXPECT_EQ(rc.last_fallback, "") << c.name;
    EXPECT_GE(rc.replayed, order.size() - 2 * 3) << c.name << ": at most 3 samples per file through libhdf5";
    if (std::string(c.compression) == "gzip") {  // lzf and szip leave random chunks as they are (filter mask)
      EXPECT_GT(rc.decode_ns, 0u) << c.name;
    }
  }
}

TEST(Hdf5Replay, SameReadsAsLibhdf5PerSampleOnDlioMadeFiles) {
  for (const char* name : {"hdf5", "hdf5_chunked_gzip"}) {
    const std::string dir = testing::DlioCase(name);
    std::vector<std::string> files;
    for (const auto& mf : testing::ReadManifest(dir)) files.push_back(dir + "/" + mf.path);
    ASSERT_EQ(files.size(), 4u) << dir;
    FormatOptions o;  // the engines take shapes, types and layouts from the files
    o.sample_dims = {1};
    const auto order = Order(files, 3);
    const hdf5_internal::ReplayCounters rc = CompareEngines(o, order, name);
    EXPECT_EQ(rc.fallback, 0u) << name << ": " << rc.last_fallback;
    EXPECT_GT(rc.replayed, 0u) << name;
  }
}

// A file made with plain libhdf5: records_0 (n, 8, 8) uint8 with the given maximum first axis and chunk shape.
// `filter`: 0 none, else H5Z_FILTER_DEFLATE, H5Z_FILTER_SZIP or the lzf filter; the bytes compress well.
void WriteRecords(const std::string& path, hsize_t n, hsize_t max0, const hsize_t chunk[3], hsize_t d = 8,
                  H5Z_filter_t filter = 0) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  const hsize_t dims[3] = {n, d, d}, maxdims[3] = {max0, d, d};
  hid_t space = H5Screate_simple(3, dims, maxdims);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  if (filter == H5Z_FILTER_DEFLATE) H5Pset_deflate(dcpl, 6);
  if (filter == H5Z_FILTER_SZIP) H5Pset_szip(dcpl, H5_SZIP_NN_OPTION_MASK, 8);
  if (filter == hdf5_internal::kLzfFilter) H5Pset_filter(dcpl, filter, H5Z_FLAG_OPTIONAL, 0, nullptr);
  hid_t dset = H5Dcreate2(file, "records_0", H5T_STD_U8LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  std::vector<uint8_t> data(n * d * d);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i / 3) % 5);
  EXPECT_GE(H5Dwrite(dset, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
  H5Dclose(dset);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(file);
  H5Pclose(fapl);
}

// Unfiltered chunks larger than libhdf5's 1 MiB chunk cache (read in parts, through the sieve buffer) have no
// provable plan: libhdf5 reads them, with the reason kept; the reads stay libhdf5's own.
TEST(Hdf5Replay, UnprovableLayoutsStayWithLibhdf5) {
  testing::TempDir dir;
  const hsize_t big[3] = {2, 1100, 1100};
  WriteRecords(dir.File("big.hdf5"), 4, 4, big, 1100);
  FormatOptions o;
  o.sample_dims = {1};
  hdf5_internal::ReplayCounters rc = CompareEngines(o, Order({dir.File("big.hdf5")}, 4), "big");
  EXPECT_EQ(rc.replayed, 0u);
  EXPECT_EQ(rc.recorded, 1u);
  EXPECT_GT(rc.fallback, 0u);
  EXPECT_NE(rc.last_fallback.find("chunk cache"), std::string::npos) << rc.last_fallback;
  EXPECT_NE(rc.last_fallback.find(dir.File("big.hdf5")), std::string::npos) << rc.last_fallback;
}

// Chunk indexes that libhdf5 reads in parts (a sample's lookup reads one block of them). A paged fixed array (more
// than 1,024 chunks: a lookup reads one page) gets a plan per page, its entries read from the recorded page; an
// extensible array (an unlimited first axis) past its index block has no provable plan: libhdf5 reads it, with the
// reason kept. The same unlimited axis with few chunks (all in the index block) is replayed.
TEST(Hdf5Replay, ChunkIndexesReadInParts) {
  testing::TempDir dir;
  const hsize_t quarter[3] = {1, 4, 4};  // 4 chunks per sample
  WriteRecords(dir.File("paged.hdf5"), 600, 600, quarter, 8, H5Z_FILTER_DEFLATE);  // 2,400 chunks: 3 pages
  WriteRecords(dir.File("paged_raw.hdf5"), 600, 600, quarter, 8);
  const hsize_t one[3] = {1, 8, 8};
  WriteRecords(dir.File("ea.hdf5"), 300, H5S_UNLIMITED, one);
  WriteRecords(dir.File("ea_small.hdf5"), 4, H5S_UNLIMITED, one);
  FormatOptions o;
  o.sample_dims = {1};
  for (const char* file : {"paged.hdf5", "paged_raw.hdf5"}) {
    hdf5_internal::ReplayCounters rc = CompareEngines(o, Order({dir.File(file)}, 600), file);
    EXPECT_EQ(rc.fallback, 0u) << file << ": " << rc.last_fallback;
    EXPECT_GT(rc.replayed, 1180u) << file << ": of 1,200";
    EXPECT_LE(rc.recorded, 3u * 3) << file << ": a recording and a proof per page (and page pairs)";
  }
  hdf5_internal::ReplayCounters ea = CompareEngines(o, Order({dir.File("ea.hdf5")}, 300), "ea");
  EXPECT_EQ(ea.replayed, 0u);
  EXPECT_EQ(ea.recorded, 1u);
  EXPECT_EQ(ea.fallback, 599u);
  EXPECT_NE(ea.last_fallback.find("chunk index"), std::string::npos) << ea.last_fallback;
  EXPECT_NE(ea.last_fallback.find(dir.File("ea.hdf5")), std::string::npos) << ea.last_fallback;
  hdf5_internal::ReplayCounters small = CompareEngines(o, Order({dir.File("ea_small.hdf5")}, 4), "ea_small");
  EXPECT_EQ(small.fallback, 0u) << small.last_fallback;
  EXPECT_GT(small.replayed, 0u);
}

// An unpaged fixed array of more than 256 chunks: the chunk table is read from the index bytes libhdf5 read for the
// first sample (libhdf5's own query would cost n^2/2 steps), filtered and not, 1 and 2 datasets per record.
TEST(Hdf5Replay, LargeFixedArrayIndexesAreReadFromTheRecordedBytes) {
  testing::TempDir dir;
  const hsize_t quarter[3] = {1, 4, 4};
  WriteRecords(dir.File("fa_gzip.hdf5"), 250, 250, quarter, 8, H5Z_FILTER_DEFLATE);  // 1,000 chunks
  WriteRecords(dir.File("fa.hdf5"), 250, 250, quarter, 8);
  FormatOptions o;
  o.sample_dims = {1};
  for (const char* file : {"fa_gzip.hdf5", "fa.hdf5"}) {
    hdf5_internal::ReplayCounters rc = CompareEngines(o, Order({dir.File(file)}, 250), file);
    EXPECT_EQ(rc.fallback, 0u) << file << ": " << rc.last_fallback;
    EXPECT_GE(rc.replayed, 500u - 3) << file;
  }
  // The generator's files: 2 datasets per record, each with its own index (the last one read is the dataset's).
  o.samples_per_file = 200;
  o.sample_dims = {8, 8};
  o.hdf5_chunk_dims = {1, 2, 4};  // 4 chunks per sample and dataset: 800 per dataset
  o.hdf5_num_dset_per_record = 2;
  o.compression = "gzip";
  auto f = MakeFormat("hdf5", o);
  ASSERT_TRUE(f.ok()) << f.status();
  IoStats gen;
  ASSERT_TRUE((*f)->Generate(dir.File("gen.hdf5"), 4, gen).ok());
  hdf5_internal::ReplayCounters rc = CompareEngines(o, Order({dir.File("gen.hdf5")}, 200), "gen");
  EXPECT_EQ(rc.fallback, 0u) << rc.last_fallback;
  EXPECT_GE(rc.replayed, 400u - 3);
}

// Compressed chunks are read as stored and decompressed by the replay engine as libhdf5's filters do, timed apart.
TEST(Hdf5Replay, DecompressesGzipLzfAndSzipChunks) {
  testing::TempDir dir;
  const hsize_t chunk[3] = {1, 16, 8};
  for (const H5Z_filter_t filter : {H5Z_FILTER_DEFLATE, H5Z_FILTER_SZIP, hdf5_internal::kLzfFilter}) {
    const std::string path = dir.File("c" + std::to_string(filter) + ".hdf5");
    WriteRecords(path, 5, 5, chunk, 32, filter);
    FormatOptions o;
    o.sample_dims = {1};
    const hdf5_internal::ReplayCounters rc = CompareEngines(o, Order({path}, 5), path);
    EXPECT_EQ(rc.fallback, 0u) << rc.last_fallback;
    EXPECT_GT(rc.replayed, 0u) << path;
    EXPECT_GT(rc.decode_ns, 0u) << path;
  }
}

// A reader whose plans outgrow their limit drops them and records the files again: the reads stay libhdf5's.
TEST(Hdf5Replay, PlansOverTheirLimitAreDroppedAndMadeAgain) {
  FormatOptions o;
  o.samples_per_file = 8;
  o.sample_dims = {16, 16};
  o.hdf5_chunk_dims = {1, 16, 16};
  auto f = MakeFormat("hdf5", o);
  ASSERT_TRUE(f.ok());
  testing::TempDir dir;
  std::vector<std::string> files;
  IoStats st;
  for (int n = 0; n < 3; ++n) {
    files.push_back(dir.File("f" + std::to_string(n) + ".hdf5"));
    ASSERT_TRUE((*f)->Generate(files.back(), n, st).ok());
  }
  const auto order = Order(files, 8);
  auto lib = MakeFormat("hdf5", [&] {
    FormatOptions l = o;
    l.hdf5_replay = false;
    return l;
  }());
  ASSERT_TRUE(lib.ok());
  auto r = (*f)->NewSampleReader();
  auto l = (*lib)->NewSampleReader();
  hdf5_internal::SetPlanLimit(*r, 1);  // every new file's plan drops the others
  for (const auto& [path, i] : order) {
    ASSERT_TRUE(r->ReadSample(path, i, st).ok());
    ASSERT_TRUE(l->ReadSample(path, i, st).ok());
    EXPECT_EQ(r->last_sample(), l->last_sample()) << path << " " << i;
  }
  const hdf5_internal::ReplayCounters rc = ReplayCountersOf(*r);
  EXPECT_GT(rc.plans_dropped, order.size() / 2) << "files interleaved: a new plan per sample, nearly";
  EXPECT_GT(rc.recorded, order.size() / 2);
  hdf5_internal::ReplayCounters kept = CompareEngines(o, order, "kept");
  EXPECT_EQ(kept.plans_dropped, 0u);
  EXPECT_LE(kept.recorded, 3u * 3);
}

// The replay path allocates nothing per sample, in our code or in the libraries (libhdf5 is not called).
TEST(Hdf5Replay, NoAllocationPerReplayedSample) {
  for (const char* comp : {"none", "gzip"}) {
    FormatOptions o;
    o.samples_per_file = 8;
    o.sample_dims = {64, 48};
    o.compression = comp;
    if (std::string(comp) == "gzip") o.hdf5_chunk_dims = {1, 32, 16};
    auto f = MakeFormat("hdf5", o);
    ASSERT_TRUE(f.ok());
    testing::TempDir dir;
    const std::string path = dir.File("a.hdf5");
    IoStats st;
    ASSERT_TRUE((*f)->Generate(path, 3, st).ok());
    auto r = (*f)->NewSampleReader();
    for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(r->ReadSample(path, i, st).ok());  // record, prove, replay
    const uint64_t replayed = ReplayCountersOf(*r).replayed;
    testing::AllocationCounter allocs;
    for (uint32_t i = 0; i < 8; ++i) ASSERT_TRUE(r->ReadSample(path, (i * 3) % 8, st).ok());
    EXPECT_EQ(allocs.counts().total(), 0u) << comp;
    EXPECT_EQ(ReplayCountersOf(*r).replayed, replayed + 8) << comp;
  }
}

TEST(Hdf5Replay, ErrorsNameTheFileAndTheSample) {
  FormatOptions o;
  o.samples_per_file = 3;
  o.sample_dims = {8, 8};
  auto f = MakeFormat("hdf5", o);
  ASSERT_TRUE(f.ok());
  testing::TempDir dir;
  const std::string path = dir.File("a.hdf5");
  IoStats st;
  ASSERT_TRUE((*f)->Generate(path, 3, st).ok());
  auto r = (*f)->NewSampleReader();
  for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(r->ReadSample(path, i, st).ok());
  ASSERT_GT(ReplayCountersOf(*r).replayed, 0u);
  auto oob = r->ReadSample(path, 3, st);
  EXPECT_EQ(oob.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(std::string(oob.status().message()).find(path), std::string::npos) << oob.status();
  // The file gone after its plan was made: the storage's own error, naming it.
  std::filesystem::remove(path);
  auto gone = r->ReadSample(path, 1, st);
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound) << gone.status();
  EXPECT_NE(std::string(gone.status().message()).find(path), std::string::npos) << gone.status();
}

}  // namespace
}  // namespace dlio
