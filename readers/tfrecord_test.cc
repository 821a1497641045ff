#include "readers/tfrecord.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "readers/format.h"
#include "readers/test_util.h"

namespace dlio {
namespace {

using testing::TempDir;

// Bitwise CRC-32C (reflected polynomial 0x82F63B78), independent of ISA-L so a wrong CRC in the file shows.
uint32_t BitwiseCrc32c(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}
uint32_t Mask(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

uint64_t Le(const std::string& s, size_t off, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[off + i]);
  return v;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Minimal protobuf reader: the length-delimited and varint fields of one message.
struct Fields {
  std::multimap<int, std::string> bytes;  // wire type 2
  std::multimap<int, uint64_t> varints;   // wire type 0
  bool ok = true;
};

bool ReadVarint(std::string_view& s, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (s.empty()) return false;
    uint8_t b = static_cast<uint8_t>(s.front());
    s.remove_prefix(1);
    *v |= uint64_t{b & 0x7Fu} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

Fields Parse(std::string_view s) {
  Fields f;
  while (!s.empty() && f.ok) {
    uint64_t tag, v;
    if (!ReadVarint(s, &tag)) return f.ok = false, f;
    const int field = static_cast<int>(tag >> 3);
    if ((tag & 7) == 0) {
      f.ok = ReadVarint(s, &v);
      f.varints.emplace(field, v);
    } else if ((tag & 7) == 2) {
      f.ok = ReadVarint(s, &v) && v <= s.size();
      if (f.ok) f.bytes.emplace(field, std::string(s.substr(0, v)));
      if (f.ok) s.remove_prefix(v);
    } else {
      f.ok = false;
    }
  }
  return f;
}

struct DecodedExample {
  std::string image;
  std::vector<int64_t> size;
};

// tf.train.Example{features(1): Features{feature(1): map entry{key(1), value(2): Feature}}}.
bool DecodeExample(std::string_view data, DecodedExample* out) {
  Fields ex = Parse(data);
  if (!ex.ok || ex.bytes.count(1) != 1) return false;
  Fields features = Parse(ex.bytes.find(1)->second);
  if (!features.ok || features.bytes.count(1) != 2) return false;
  for (auto [it, end] = features.bytes.equal_range(1); it != end; ++it) {
    Fields entry = Parse(it->second);
    if (!entry.ok || entry.bytes.count(1) != 1 || entry.bytes.count(2) != 1) return false;
    const std::string key = entry.bytes.find(1)->second;
    Fields feature = Parse(entry.bytes.find(2)->second);
    if (!feature.ok) return false;
    if (key == "image") {
      if (feature.bytes.count(1) != 1) return false;                 // bytes_list
      Fields list = Parse(feature.bytes.find(1)->second);
      if (!list.ok || list.bytes.count(1) != 1) return false;
      out->image = list.bytes.find(1)->second;
    } else if (key == "size") {
      if (feature.bytes.count(3) != 1) return false;                 // int64_list
      Fields list = Parse(feature.bytes.find(3)->second);
      if (!list.ok) return false;
      for (auto [p, e] = list.bytes.equal_range(1); p != e; ++p) {   // packed
        std::string_view packed = p->second;
        for (uint64_t v; !packed.empty();) {
          if (!ReadVarint(packed, &v)) return false;
          out->size.push_back(static_cast<int64_t>(v));
        }
      }
      for (auto [p, e] = list.varints.equal_range(1); p != e; ++p) out->size.push_back(static_cast<int64_t>(p->second));
    } else {
      return false;
    }
  }
  return true;
}

// Walks the file checking every frame; returns the record payloads.
std::vector<std::string> WalkAndCheck(const std::string& path) {
  const std::string f = Slurp(path);
  std::vector<std::string> records;
  size_t off = 0;
  while (off < f.size()) {
    if (f.size() - off < 12) {
      ADD_FAILURE() << "trailing " << f.size() - off << " bytes at " << off;
      break;
    }
    const uint64_t len = Le(f, off, 8);
    EXPECT_EQ(Le(f, off + 8, 4), Mask(BitwiseCrc32c(reinterpret_cast<const uint8_t*>(f.data()) + off, 8)))
        << "length CRC of record at " << off;
    if (f.size() - off - 12 < len + 4) {
      ADD_FAILURE() << "record at " << off << " runs past the end";
      break;
    }
    const std::string data = f.substr(off + 12, len);
    EXPECT_EQ(Le(f, off + 12 + len, 4),
              Mask(BitwiseCrc32c(reinterpret_cast<const uint8_t*>(data.data()), data.size())))
        << "data CRC of record at " << off;
    records.push_back(data);
    off += 12 + len + 4;
  }
  return records;
}

std::unique_ptr<Format> Tf(int64_t nspf, std::vector<int64_t> dims, int64_t transfer = 262144) {
  FormatOptions o;
  o.samples_per_file = nspf;
  o.sample_dims = std::move(dims);
  o.transfer_size = transfer;
  auto f = MakeFormat("tfrecord", o);
  EXPECT_TRUE(f.ok()) << f.status();
  return std::move(*f);
}

TEST(Tfrecord, GeneratedFramingCrcsAndExamples) {
  TempDir dir;
  const int64_t nspf = 5, d1 = 40, d2 = 30;
  auto f = Tf(nspf, {d1, d2});
  const std::string path = dir.File("img_0_of_1.tfrecord");
  IoStats gen;
  ASSERT_TRUE(f->Generate(path, 11, gen).ok());
  EXPECT_EQ(gen.Snapshot().bytes, testing::FileSize(path));
  EXPECT_EQ(gen.Snapshot().files, 1u);
  EXPECT_EQ(gen.Snapshot().samples, static_cast<uint64_t>(nspf));

  std::vector<std::string> records = WalkAndCheck(path);
  ASSERT_EQ(records.size(), static_cast<size_t>(nspf));
  std::vector<std::string> images;
  for (const std::string& r : records) {
    DecodedExample ex;
    ASSERT_TRUE(DecodeExample(r, &ex)) << "not a tf.train.Example with image and size";
    EXPECT_EQ(ex.image.size(), static_cast<size_t>(d1 * d2));
    EXPECT_EQ(ex.size, std::vector<int64_t>{d1}) << "DLIO stores its nominal dimension";
    images.push_back(ex.image);
  }
  EXPECT_NE(images[0], images[1]) << "every record has its own random bytes";
}

TEST(Tfrecord, GenerateIsReproducible) {
  TempDir dir;
  auto f = Tf(3, {16, 16});
  IoStats st;
  ASSERT_TRUE(f->Generate(dir.File("a.tfrecord"), 4, st).ok());
  ASSERT_TRUE(f->Generate(dir.File("b.tfrecord"), 4, st).ok());
  ASSERT_TRUE(f->Generate(dir.File("c.tfrecord"), 5, st).ok());
  EXPECT_EQ(Slurp(dir.File("a.tfrecord")), Slurp(dir.File("b.tfrecord")));
  EXPECT_NE(Slurp(dir.File("a.tfrecord")), Slurp(dir.File("c.tfrecord")));
}

TEST(Tfrecord, StreamAcrossTransferSizes) {
  TempDir dir;
  const int64_t nspf = 7;
  auto gen = Tf(nspf, {300, 300});  // 90,000-byte images: records larger than most transfer sizes below
  const std::string path = dir.File("s.tfrecord");
  IoStats g;
  ASSERT_TRUE(gen->Generate(path, 1, g).ok());
  const std::vector<std::string> want = WalkAndCheck(path);
  const uint64_t size = testing::FileSize(path);
  for (int64_t transfer : {1, 13, 4096, 90000, 262144, 1 << 22}) {
    auto f = Tf(nspf, {300, 300}, transfer);
    auto r = f->NewStreamReader();
    IoStats st;
    ASSERT_TRUE(r->Open(path, st).ok());
    size_t n = 0;
    for (;;) {
      auto more = r->Next(st);
      ASSERT_TRUE(more.ok()) << more.status();
      if (!*more) break;
      ASSERT_LT(n, want.size());
      EXPECT_EQ(r->last_record(), want[n]) << "record " << n << " transfer " << transfer;
      ++n;
    }
    EXPECT_EQ(n, static_cast<size_t>(nspf)) << "transfer " << transfer;
    IoSnapshot s = st.Snapshot();
    EXPECT_EQ(s.bytes, size) << "transfer " << transfer;
    // ceil(size / transfer) reads; none past the end of the file (its size from Open() stops the stream).
    EXPECT_EQ(s.ops, (size + transfer - 1) / transfer) << "transfer " << transfer;
    EXPECT_EQ(s.files, 1u);
    EXPECT_EQ(s.samples, static_cast<uint64_t>(nspf));
    EXPECT_FALSE(*r->Next(st)) << "stays at EOF";
    r->Close();
  }
}

TEST(Tfrecord, NoHeapAllocationPerRecordOnceWarm) {
  TempDir dir;
  auto f = Tf(20, {64, 64}, 1000);
  const std::string a = dir.File("a.tfrecord"), b = dir.File("b.tfrecord");
  IoStats st;
  ASSERT_TRUE(f->Generate(a, 1, st).ok());
  ASSERT_TRUE(f->Generate(b, 2, st).ok());
  auto r = f->NewStreamReader();
  auto drain = [&](const std::string& p) {
    ASSERT_TRUE(r->Open(p, st).ok());
    for (int n = 0;; ++n) {
      auto more = r->Next(st);
      ASSERT_TRUE(more.ok());
      if (!*more) {
        EXPECT_EQ(n, 20);
        break;
      }
    }
  };
  drain(a);  // warm-up: the buffer grows to one record plus one transfer
  testing::AllocationCounter allocs;
  drain(b);
  drain(a);
  EXPECT_EQ(allocs.count(), 0u);
}

TEST(Tfrecord, EmptyFileHasNoRecords) {
  TempDir dir;
  std::ofstream(dir.File("e.tfrecord")).close();
  auto r = Tf(1, {4})->NewStreamReader();
  IoStats st;
  ASSERT_TRUE(r->Open(dir.File("e.tfrecord"), st).ok());
  auto more = r->Next(st);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
}

TEST(Tfrecord, DamagedFilesAreDataLossNamingTheFile) {
  TempDir dir;
  auto f = Tf(3, {50, 50}, 64);
  const std::string good = dir.File("good.tfrecord");
  IoStats st;
  ASSERT_TRUE(f->Generate(good, 1, st).ok());
  const std::string bytes = Slurp(good);

  auto expect_loss = [&](const std::string& name, const std::string& content, int good_records) {
    const std::string p = dir.File(name);
    std::ofstream(p, std::ios::binary) << content;
    auto r = f->NewStreamReader();
    ASSERT_TRUE(r->Open(p, st).ok());
    for (int i = 0; i < good_records; ++i) ASSERT_TRUE(*r->Next(st)) << name;
    auto bad = r->Next(st);
    ASSERT_FALSE(bad.ok()) << name;
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << name;
    EXPECT_NE(std::string(bad.status().message()).find(p), std::string::npos) << bad.status();
  };
  const size_t rec = bytes.size() / 3;
  expect_loss("cut_data.tfrecord", bytes.substr(0, rec + 100), 1);
  expect_loss("cut_header.tfrecord", bytes.substr(0, rec + 5), 1);
  std::string huge = bytes;
  huge[7] = '\x7f';  // the first length now claims ~2^63 bytes: must not try to allocate it
  expect_loss("huge_length.tfrecord", huge, 0);

  auto missing = f->NewStreamReader()->Open(dir.File("nope.tfrecord"), st);
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(missing.message()).find("nope.tfrecord"), std::string::npos);
}

TEST(Tfrecord, SurvivesCorruptedFraming) {
  TempDir dir;
  auto f = Tf(2, {4, 4}, 7);
  const std::string good = dir.File("good.tfrecord"), bad = dir.File("bad.tfrecord");
  IoStats st;
  ASSERT_TRUE(f->Generate(good, 1, st).ok());
  const std::string bytes = Slurp(good);
  auto r = f->NewStreamReader();
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (char v : {'\x00', '\xff'}) {
      std::string m = bytes;
      m[i] = v;
      std::ofstream(bad, std::ios::binary | std::ios::trunc) << m;
      ASSERT_TRUE(r->Open(bad, st).ok());
      for (int n = 0; n < 4; ++n) {  // at most 2 records; then EOF or an error
        auto more = r->Next(st);
        if (!more.ok()) {
          EXPECT_NE(std::string(more.status().message()).find(bad), std::string::npos) << more.status();
          break;
        }
        if (!*more) break;
      }
    }
  }
}

TEST(Tfrecord, NextWithoutOpenAndSampleReaderAreRefused) {
  auto f = Tf(1, {4});
  IoStats st;
  EXPECT_EQ(f->NewStreamReader()->Next(st).status().code(), absl::StatusCode::kFailedPrecondition);
  auto s = f->NewSampleReader()->ReadSample("/tmp/x.tfrecord", 0, st);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(s.status().message()).find("/tmp/x.tfrecord"), std::string::npos);
}

TEST(Tfrecord, IsaLCrcMatchesBitwise) {
  std::string s(100000, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 131 + 7);
  for (size_t n : {0, 1, 7, 8, 63, 64, 65, 4096, 100000}) {
    EXPECT_EQ(Crc32c(s.data(), n), BitwiseCrc32c(reinterpret_cast<const uint8_t*>(s.data()), n)) << n;
  }
  EXPECT_EQ(MaskCrc32c(0x12345678u), Mask(0x12345678u));
}

}  // namespace
}  // namespace dlio
