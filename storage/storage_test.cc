#include "storage/storage.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "readers/format.h"
#include "storage/io_util.h"
#include "storage/open.h"
#include "readers/test_util.h"

namespace dlio {
namespace {

using testing::TempDir;

constexpr IoEngine kEngines[] = {IoEngine::kPosix, IoEngine::kODirect, IoEngine::kIoUring, IoEngine::kMmap};

std::string RandomBytes(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  internal::Rng(seed).Fill(reinterpret_cast<uint8_t*>(s.data()), n);
  return s;
}

void WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::unique_ptr<StorageReader> NewReader(IoEngine e) {
  absl::StatusOr<std::unique_ptr<StorageReader>> r = StorageReader::New(e);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : nullptr;
}

class EngineTest : public ::testing::TestWithParam<IoEngine> {};

TEST(IoEngineNames, RoundTripAndUnknown) {
  for (IoEngine e : kEngines) {
    absl::StatusOr<IoEngine> p = ParseIoEngine(IoEngineName(e));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, e);
  }
  absl::StatusOr<IoEngine> bad = ParseIoEngine("aio");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "dlio_ext.io_engine: unknown engine 'aio' (allowed: posix, odirect, io_uring, mmap)");
}

TEST(AlignedBuffer, AlignedAndKeepsContentsWhenGrowing) {
  TrimBufferPool();  // fresh allocations, so the capacities below are exact
  AlignedBuffer b;
  EXPECT_EQ(b.capacity(), 0u);
  b.Reserve(100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kDirectAlign, 0u);
  EXPECT_EQ(b.capacity(), kDirectAlign);  // rounded up to the alignment
  std::memcpy(b.data(), "hello", 5);
  uint8_t* before = b.data();
  b.Reserve(kDirectAlign);  // fits: no reallocation
  EXPECT_EQ(b.data(), before);
  b.Reserve(3 * kDirectAlign + 1, 5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kDirectAlign, 0u);
  EXPECT_EQ(b.capacity(), 4 * kDirectAlign);
  EXPECT_EQ(std::memcmp(b.data(), "hello", 5), 0);
}

// Freed buffers are kept (within the budget) and handed to the next buffer that fits, with the same memory.
TEST(AlignedBuffer, FreedBuffersArePooledForTheNextReader) {
  TrimBufferPool();
  uint8_t* first = nullptr;
  {
    AlignedBuffer a;
    a.Reserve(3 * kDirectAlign);
    first = a.data();
  }
  EXPECT_EQ(BufferPoolBytes(), 3 * kDirectAlign);
  {
    testing::AllocationCounter allocs;
    AlignedBuffer b;
    b.Reserve(2 * kDirectAlign);  // the smallest pooled buffer that fits
    EXPECT_EQ(b.data(), first);
    EXPECT_EQ(b.capacity(), 3 * kDirectAlign);
    EXPECT_EQ(BufferPoolBytes(), 0u);
    EXPECT_EQ(allocs.count(), 0u);
  }
  {
    AlignedBuffer big;  // larger than the pool's budget: freed, not kept
    big.Reserve(kBufferPoolBytes + kDirectAlign);
  }
  EXPECT_EQ(BufferPoolBytes(), 3 * kDirectAlign);
  TrimBufferPool();
  EXPECT_EQ(BufferPoolBytes(), 0u);
}

// A whole-file read of an odd-sized file gives the file's bytes with every engine, and accounts exactly the bytes
// the kernel returned (not the rounded-up O_DIRECT lengths) in one op per piece: no extra read at the end.
TEST_P(EngineTest, WholeFileRoundTripAndAccounting) {
  TempDir dir;
  const size_t size = 3 * (size_t{1} << 20) + 12345;
  const std::string bytes = RandomBytes(size, 7);
  const std::string path = dir.File("f.bin");
  WriteFileBytes(path, bytes);

  std::unique_ptr<StorageReader> r = NewReader(GetParam());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->alignment(), GetParam() == IoEngine::kODirect ? kDirectAlign : 1u);
  IoStats stats;
  uint64_t got_size = 0;
  ASSERT_TRUE(r->Open(path, &got_size, stats).ok());
  EXPECT_EQ(got_size, size);
  AlignedBuffer buf;
  buf.Reserve(RoundUp(size, r->alignment()));
  const size_t piece = size_t{1} << 20;
  absl::Status s = r->ReadWhole(buf.data(), size, piece, stats);
  ASSERT_TRUE(s.ok()) << s;
  r->Close();
  EXPECT_EQ(std::memcmp(buf.data(), bytes.data(), size), 0);
  const IoSnapshot snap = stats.Snapshot();
  EXPECT_EQ(snap.bytes, size);
  EXPECT_EQ(snap.ops, 4u);  // 3 full pieces and the tail
  EXPECT_EQ(snap.files, 1u);
  EXPECT_EQ(snap.latency.count(), 4u);
}

// More requests than io_uring keeps in flight, given in one call, each landing where it asked.
TEST_P(EngineTest, ManyRequestsInOneCall) {
  TempDir dir;
  const size_t n = 3 * kUringDepth + 1, len = kDirectAlign;
  const std::string bytes = RandomBytes(n * len, 11);
  const std::string path = dir.File("g.bin");
  WriteFileBytes(path, bytes);
  std::unique_ptr<StorageReader> r = NewReader(GetParam());
  ASSERT_NE(r, nullptr);
  IoStats stats;
  uint64_t size = 0;
  ASSERT_TRUE(r->Open(path, &size, stats).ok());
  AlignedBuffer buf;
  buf.Reserve(n * len);
  std::vector<ReadRequest> reqs(n);
  for (size_t i = 0; i < n; ++i) {  // in reverse file order, to show that order does not matter
    reqs[i].buf = buf.data() + i * len;
    reqs[i].off = (n - 1 - i) * len;
    reqs[i].len = len;
  }
  ASSERT_TRUE(r->Read(reqs.data(), n, stats).ok());
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(reqs[i].got, len);
    EXPECT_EQ(std::memcmp(buf.data() + i * len, bytes.data() + (n - 1 - i) * len, len), 0) << i;
  }
  EXPECT_EQ(stats.Snapshot().ops, n);
  EXPECT_EQ(stats.Snapshot().bytes, n * len);
}

// A request running past the end of the file completes with the file's bytes and one op.
TEST_P(EngineTest, ReadPastTheEndStopsAtTheEnd) {
  TempDir dir;
  const std::string bytes = RandomBytes(kDirectAlign + 100, 3);
  const std::string path = dir.File("h.bin");
  WriteFileBytes(path, bytes);
  std::unique_ptr<StorageReader> r = NewReader(GetParam());
  ASSERT_NE(r, nullptr);
  IoStats stats;
  uint64_t size = 0;
  ASSERT_TRUE(r->Open(path, &size, stats).ok());
  AlignedBuffer buf;
  buf.Reserve(2 * kDirectAlign);
  ReadRequest req;
  req.buf = buf.data();
  req.off = kDirectAlign;
  req.len = kDirectAlign;
  ASSERT_TRUE(r->Read(&req, 1, stats).ok());
  EXPECT_EQ(req.got, 100u);
  EXPECT_EQ(std::memcmp(buf.data(), bytes.data() + kDirectAlign, 100), 0);
  EXPECT_EQ(stats.Snapshot().ops, 1u);
  EXPECT_EQ(stats.Snapshot().bytes, 100u);
  // A file shorter than the size the caller expects is DataLoss naming the file.
  absl::Status s = r->ReadWhole(buf.data(), 2 * kDirectAlign, kDirectAlign, stats);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(path), std::string::npos) << s;
}

TEST_P(EngineTest, ErrorsNameTheFile) {
  std::unique_ptr<StorageReader> r = NewReader(GetParam());
  ASSERT_NE(r, nullptr);
  IoStats stats;
  uint64_t size = 0;
  absl::Status s = r->Open("/nonexistent/dir/file.npz", &size, stats);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("/nonexistent/dir/file.npz"), std::string::npos);
  EXPECT_EQ(stats.Snapshot().files, 0u);
  ReadRequest req;
  EXPECT_EQ(r->Read(&req, 1, stats).code(), absl::StatusCode::kFailedPrecondition);
}

INSTANTIATE_TEST_SUITE_P(Engines, EngineTest, ::testing::ValuesIn(kEngines),
                         [](const ::testing::TestParamInfo<IoEngine>& i) { return IoEngineName(i.param); });

TEST(ODirect, MisalignedRequestsAreRefused) {
  TempDir dir;
  const std::string path = dir.File("d.bin");
  WriteFileBytes(path, RandomBytes(4 * kDirectAlign, 5));
  std::unique_ptr<StorageReader> r = NewReader(IoEngine::kODirect);
  ASSERT_NE(r, nullptr);
  IoStats stats;
  uint64_t size = 0;
  ASSERT_TRUE(r->Open(path, &size, stats).ok());
  AlignedBuffer buf;
  buf.Reserve(2 * kDirectAlign);
  for (auto [delta_buf, off, len] : {std::tuple<size_t, uint64_t, size_t>{1, 0, kDirectAlign},
                                     {0, 512, kDirectAlign},
                                     {0, 0, kDirectAlign + 1}}) {
    ReadRequest req;
    req.buf = buf.data() + delta_buf;
    req.off = off;
    req.len = len;
    absl::Status s = r->Read(&req, 1, stats);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << delta_buf << " " << off << " " << len;
    EXPECT_NE(s.message().find("dlio_ext.io_engine: odirect"), std::string::npos) << s;
  }
  EXPECT_EQ(stats.Snapshot().ops, 0u);
}

// DLIO_IOLOG_DIR: the reads are written as a fio version 2 iolog that fio can replay.
TEST(IoLog, RecordsAFioReplayableLog) {
  TempDir dir, logs;
  const std::string path = dir.File("r.bin");
  WriteFileBytes(path, RandomBytes(10000, 1));
  ::setenv("DLIO_IOLOG_DIR", logs.path().c_str(), 1);
  absl::StatusOr<std::unique_ptr<StorageReader>> r = StorageReader::New(IoEngine::kPosix);
  ::unsetenv("DLIO_IOLOG_DIR");
  ASSERT_TRUE(r.ok()) << r.status();
  IoStats stats;
  uint64_t size = 0;
  AlignedBuffer buf;
  buf.Reserve(size_t{1} << 14);
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE((*r)->Open(path, &size, stats).ok());
    ASSERT_TRUE((*r)->ReadWhole(buf.data(), size, 8192, stats).ok());
    (*r)->Close();
  }
  r->reset();  // flushes the log
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(logs.path())) names.push_back(e.path().string());
  ASSERT_EQ(names.size(), 1u);
  std::ifstream in(names[0]);
  const std::string log((std::istreambuf_iterator<char>(in)), {});
  const std::string once = path + " open\n" + path + " read 0 8192\n" + path + " read 8192 1808\n" + path + " close\n";
  EXPECT_EQ(log, "fio version 2 iolog\n" + path + " add\n" + once + once);
}

// Through the formats: every engine delivers the same npz samples and tfrecord records as posix, with the same
// byte count (the file sizes: whole files for npz, the whole stream for tfrecord).
TEST(EnginesThroughFormats, SameSamplesAndRecordsAsPosix) {
  TempDir dir;
  for (const char* name : {"npz", "tfrecord"}) {
    FormatOptions o;
    o.samples_per_file = 5;
    o.sample_dims = {70, 70};
    o.transfer_size = 5000;  // not a multiple of 4096: odirect rounds it up, and records straddle reads
    absl::StatusOr<std::unique_ptr<Format>> gen = MakeFormat(name, o);
    ASSERT_TRUE(gen.ok()) << gen.status();
    const std::string path = dir.File(std::string("f.") + name);
    IoStats wstats;
    ASSERT_TRUE((*gen)->Generate(path, 42, wstats).ok());
    const uint64_t file_size = testing::FileSize(path);

    std::vector<std::string> posix_items;
    for (IoEngine e : kEngines) {
      SCOPED_TRACE(std::string(name) + " " + IoEngineName(e));
      o.io_engine = e;
      absl::StatusOr<std::unique_ptr<Format>> f = MakeFormat(name, o);
      ASSERT_TRUE(f.ok());
      IoStats stats;
      std::vector<std::string> items;
      if ((*f)->streaming()) {
        std::unique_ptr<StreamReader> sr = (*f)->NewStreamReader();
        for (int pass = 0; pass < 2; ++pass) {  // a second file on the same reader reuses its buffer
          ASSERT_TRUE(sr->Open(path, stats).ok());
          for (;;) {
            absl::StatusOr<bool> more = sr->Next(stats);
            ASSERT_TRUE(more.ok()) << more.status();
            if (!*more) break;
            if (pass == 0) items.emplace_back(sr->last_record());
          }
          sr->Close();
        }
        EXPECT_EQ(stats.Snapshot().bytes, 2 * file_size);
      } else {
        std::unique_ptr<SampleReader> sr = (*f)->NewSampleReader();
        for (uint32_t i = 0; i < 5; ++i) {
          absl::StatusOr<uint64_t> n = sr->ReadSample(path, i, stats);
          ASSERT_TRUE(n.ok()) << n.status();
          items.emplace_back(sr->last_sample());
        }
        EXPECT_EQ(stats.Snapshot().bytes, 5 * file_size);
      }
      EXPECT_EQ(items.size(), 5u);
      if (e == IoEngine::kPosix) {
        posix_items = items;
      } else {
        EXPECT_EQ(items, posix_items);
      }
    }
  }
}

// The allocation counter sees every allocator the readers could use (AlignedBuffer uses aligned_alloc).
TEST(AllocationCounter, CountsTheMallocFamilyAndNew) {
  TrimBufferPool();  // so that the AlignedBuffer below allocates
  testing::AllocationCounter allocs;
  void* a = std::malloc(10);
  void* b = std::aligned_alloc(kDirectAlign, kDirectAlign);
  auto* c = new int(3);
  // Let the pointers escape so the compiler cannot elide the allocation/free pairs.
  asm volatile("" : : "r"(a), "r"(b), "r"(c) : "memory");
  AlignedBuffer d;
  d.Reserve(1);
  EXPECT_EQ(allocs.count(), 4u);
  std::free(a);
  std::free(b);
  delete c;
}

// Once warm (buffers grown, io_uring ring set up), reading allocates nothing, with every engine.
TEST(EnginesThroughFormats, NoHeapAllocationPerSampleOrRecordOnceWarm) {
  TempDir dir;
  for (IoEngine e : kEngines) {
    SCOPED_TRACE(IoEngineName(e));
    FormatOptions o;
    o.samples_per_file = 4;
    o.sample_dims = {100, 100};
    o.transfer_size = 6000;
    o.io_engine = e;
    auto npz = MakeFormat("npz", o);
    auto tf = MakeFormat("tfrecord", o);
    ASSERT_TRUE(npz.ok() && tf.ok());
    IoStats st;
    const std::string a = dir.File("a.npz"), b = dir.File("b.npz");
    const std::string ta = dir.File("a.tfrecord"), tb = dir.File("b.tfrecord");
    ASSERT_TRUE((*npz)->Generate(a, 1, st).ok() && (*npz)->Generate(b, 2, st).ok());
    ASSERT_TRUE((*tf)->Generate(ta, 1, st).ok() && (*tf)->Generate(tb, 2, st).ok());
    auto sr = (*npz)->NewSampleReader();
    auto tr = (*tf)->NewStreamReader();
    auto drain = [&](const std::string& p) {
      ASSERT_TRUE(tr->Open(p, st).ok());
      int n = 0;
      while (*tr->Next(st)) ++n;
      EXPECT_EQ(n, 4);
      tr->Close();
    };
    ASSERT_TRUE(sr->ReadSample(a, 0, st).ok());  // warm-up
    drain(ta);
    testing::AllocationCounter allocs;
    for (uint32_t i = 0; i < 4; ++i) {
      ASSERT_TRUE(sr->ReadSample(a, i, st).ok());
      ASSERT_TRUE(sr->ReadSample(b, i, st).ok());
    }
    drain(tb);
    drain(ta);
    EXPECT_EQ(allocs.count(), 0u);
  }
}

TEST(EnginesThroughFormats, Hdf5RefusesEnginesOtherThanPosix) {
  FormatOptions o;
  o.sample_dims = {8, 8};
  o.io_engine = IoEngine::kIoUring;
  absl::StatusOr<std::unique_ptr<Format>> f = MakeFormat("hdf5", o);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(),
            "dlio_ext.io_engine: io_uring is not available for hdf5 (libhdf5 does its own reads; use posix)");
}


// FileWriter hands its sink whole kWriteChunk pieces (one virtual call per chunk, not per append), large appends and
// AppendDirect() straight from the caller's memory, and what is left at Finish().
class RecordingSink final : public internal::WriteSink {
 public:
  explicit RecordingSink(bool gathers = false) : gathers_(gathers) {}
  bool Gathers() const override { return gathers_; }
  struct Call {
    const void* data;
    size_t n;
  };
  absl::Status Open(const std::string& path) override {
    opened.push_back(path);
    return absl::OkStatus();
  }
  absl::Status Append(const void* data, size_t n, IoStats&) override {
    appends.push_back({data, n});
    bytes.append(static_cast<const char*>(data), n);
    return absl::OkStatus();
  }
  absl::Status Finish(IoStats&) override {
    ++finished;
    return absl::OkStatus();
  }
  std::vector<std::string> opened;
  std::vector<Call> appends;
  std::string bytes;
  int finished = 0;

 private:
  bool gathers_;
};

TEST(FileWriter, HandsTheSinkOneCallPerChunk) {
  auto owned = std::make_unique<RecordingSink>();
  RecordingSink& sink = *owned;
  internal::FileWriter w(std::move(owned));
  IoStats stats;
  ASSERT_TRUE(w.Open("obj/a").ok());
  const std::string data = RandomBytes(internal::kWriteChunk * 5 / 2, 7);
  for (size_t off = 0; off < data.size(); off += 1000) {  // small appends: gathered
    ASSERT_TRUE(w.Append(data.data() + off, std::min<size_t>(1000, data.size() - off), stats).ok());
  }
  EXPECT_EQ(w.bytes_written(), data.size());
  ASSERT_EQ(sink.appends.size(), 2u);
  EXPECT_EQ(sink.appends[0].n, internal::kWriteChunk);
  EXPECT_EQ(sink.appends[1].n, internal::kWriteChunk);
  ASSERT_TRUE(w.Finish(stats).ok());
  ASSERT_EQ(sink.appends.size(), 3u);
  EXPECT_EQ(sink.appends[2].n, data.size() - 2 * internal::kWriteChunk);
  EXPECT_EQ(sink.finished, 1);
  EXPECT_EQ(sink.bytes, data);
  EXPECT_EQ(sink.opened, std::vector<std::string>{"obj/a"});
}

// A sink that gathers itself (S3ObjectWriter's part buffer) gets every append as it comes, from the caller's memory.
TEST(FileWriter, ASinkThatGathersGetsEveryAppendUncopied) {
  auto owned = std::make_unique<RecordingSink>(/*gathers=*/true);
  RecordingSink& sink = *owned;
  internal::FileWriter w(std::move(owned));
  IoStats stats;
  ASSERT_TRUE(w.Open("obj/b").ok());
  const std::string data = RandomBytes(10000, 9);
  for (size_t off = 0; off < data.size(); off += 1000) ASSERT_TRUE(w.Append(data.data() + off, 1000, stats).ok());
  ASSERT_EQ(sink.appends.size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(sink.appends[i].data, data.data() + i * 1000);
  ASSERT_TRUE(w.Finish(stats).ok());
  EXPECT_EQ(sink.appends.size(), 10u);
  EXPECT_EQ(sink.bytes, data);
  EXPECT_EQ(w.bytes_written(), 0u + data.size());
}

TEST(FileWriter, LargeAppendsAndAppendDirectSkipTheStagingBuffer) {
  auto owned = std::make_unique<RecordingSink>();
  RecordingSink& sink = *owned;
  internal::FileWriter w(std::move(owned));
  IoStats stats;
  const std::string big = RandomBytes(internal::kWriteChunk + 10, 8);
  ASSERT_TRUE(w.Open("f").ok());
  ASSERT_TRUE(w.Append(big.data(), big.size(), stats).ok());  // one chunk direct, 10 bytes gathered
  ASSERT_EQ(sink.appends.size(), 1u);
  EXPECT_EQ(sink.appends[0].data, big.data());
  ASSERT_TRUE(w.AppendDirect(big.data(), big.size(), stats).ok());  // the 10 bytes, then two pieces direct
  ASSERT_EQ(sink.appends.size(), 4u);
  EXPECT_EQ(sink.appends[1].n, 10u);
  EXPECT_EQ(sink.appends[2].data, big.data());
  EXPECT_EQ(sink.appends[3].data, big.data() + internal::kWriteChunk);
  EXPECT_EQ(w.bytes_written(), 2 * big.size());
  ASSERT_TRUE(w.Finish(stats).ok());
  EXPECT_EQ(sink.appends.size(), 4u);  // nothing was left to hand over
  EXPECT_EQ(sink.bytes, big + big);
  // A second file through the same sink starts from zero.
  ASSERT_TRUE(w.Open("g").ok());
  EXPECT_EQ(w.bytes_written(), 0u);
}

// The factory: a file target writes files (below its confined folder) with one op per pwrite and one file each.
TEST(StorageFactory, FileSinkWritesBelowTheConfinedFolder) {
  TempDir dir;
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> root = ConfinedDir::OpenRoot(dir.path());
  ASSERT_TRUE(root.ok()) << root.status();
  for (const std::shared_ptr<const ConfinedDir>& confined : {std::shared_ptr<const ConfinedDir>(), *root}) {
    const std::string name = confined ? "confined.bin" : dir.File("plain.bin");
    internal::FileWriter w(NewWriteSink(StorageTarget{IoEngine::kPosix, nullptr, confined}));
    IoStats stats;
    const std::string data = RandomBytes(internal::kWriteChunk + 100, 9);
    ASSERT_TRUE(w.Open(name).ok());
    ASSERT_TRUE(w.Append(data.data(), data.size(), stats).ok());
    ASSERT_TRUE(w.Finish(stats).ok());
    EXPECT_EQ(stats.Snapshot().files, 1u);
    EXPECT_EQ(stats.Snapshot().ops, 2u);
    std::ifstream in(confined ? dir.File(name) : name, std::ios::binary);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), data);
  }
  internal::FileWriter bad(NewWriteSink(StorageTarget{}));
  absl::Status s = bad.Open(dir.File("no/such/dir/f.bin"));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("no/such/dir/f.bin: create"), std::string::npos) << s;
}

TEST(StorageFactory, ReadersForFilesAndS3WithoutABucketRefused) {
  absl::StatusOr<std::unique_ptr<StorageReader>> reader =
      NewStorageReader(StorageTarget{IoEngine::kMmap, nullptr, nullptr});
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->engine(), IoEngine::kMmap);
  for (const absl::Status& s : {NewStorageReader(StorageTarget{IoEngine::kS3, nullptr, nullptr}).status(),
                                 StorageReader::New(IoEngine::kS3).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(s.message(), "storage: the s3 engine needs a bucket configuration");
  }
}

// storage/CMakeLists.txt: within the room only the factory (open.{h,cc}) and s3/ itself include storage/s3/, so the
// base the S3 engine builds on never depends on it.
TEST(StorageRoom, OnlyTheFactoryIncludesS3) {
  const std::string needle = std::string("#include \"storage/") + "s3/";
  size_t seen = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(DLIO_SOURCE_DIR) + "/storage")) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    std::ifstream in(e.path());
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    ++seen;
    if (name == "open.cc" || name == "open.h") continue;
    EXPECT_EQ(text.find(needle), std::string::npos) << "storage/" << name << " includes storage/s3/";
  }
  EXPECT_GE(seen, 6u);
}

}  // namespace
}  // namespace dlio
