#include "readers/npz.h"

#include <gtest/gtest.h>
#include <zip.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "readers/format.h"
#include "storage/io_util.h"
#include "readers/test_util.h"

namespace dlio {
namespace {

using testing::TempDir;

std::unique_ptr<Format> Npz(int64_t nspf, std::vector<int64_t> dims) {
  FormatOptions o;
  o.samples_per_file = nspf;
  o.sample_dims = std::move(dims);
  auto f = MakeFormat("npz", o);
  EXPECT_TRUE(f.ok()) << f.status();
  return std::move(*f);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A member's bytes read through libzip (independent of the reader's own zip parsing).
std::string ZipMember(const std::string& path, const char* name) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  EXPECT_NE(z, nullptr) << path;
  if (z == nullptr) return {};
  zip_stat_t st;
  zip_stat(z, name, 0, &st);
  EXPECT_EQ(st.comp_method, ZIP_CM_STORE) << name;
  std::string out(st.size, '\0');
  zip_file_t* f = zip_fopen(z, name, 0);
  EXPECT_NE(f, nullptr) << name;
  if (f != nullptr) {
    EXPECT_EQ(zip_fread(f, out.data(), out.size()), static_cast<zip_int64_t>(out.size()));
    zip_fclose(f);
  }
  zip_close(z);
  return out;
}

TEST(Npz, GenerateAccountsWritesAndIsReproducible) {
  TempDir dir;
  auto f = Npz(3, {16, 24});
  IoStats a, b;
  ASSERT_TRUE(f->Generate(dir.File("a.npz"), 7, a).ok());
  ASSERT_TRUE(f->Generate(dir.File("b.npz"), 7, b).ok());
  ASSERT_TRUE(f->Generate(dir.File("c.npz"), 8, b).ok());
  IoSnapshot s = a.Snapshot();
  EXPECT_EQ(s.bytes, testing::FileSize(dir.File("a.npz")));
  EXPECT_GE(s.ops, 1u);
  EXPECT_EQ(s.files, 1u);
  EXPECT_EQ(s.samples, 3u);
  EXPECT_EQ(Slurp(dir.File("a.npz")), Slurp(dir.File("b.npz")));
  EXPECT_NE(Slurp(dir.File("a.npz")), Slurp(dir.File("c.npz")));
}

// x.npy is numpy's header followed by the seed's random stream, exactly as one Rng::Fill of the whole array would
// make it (the member is generated on demand inside libzip's copy loop, in pieces); zip_fread checks its CRC too.
TEST(Npz, GeneratedMemberIsTheHeaderAndTheSeedsRandomStream) {
  TempDir dir;
  auto f = Npz(3, {97, 89});  // 25,899 bytes: several libzip reads, and a length that is not a multiple of 8
  IoStats st;
  ASSERT_TRUE(f->Generate(dir.File("r.npz"), 42, st).ok());
  std::string want = NpyHeader("|u1", {97, 89, 3});
  std::string data(97 * 89 * 3, '\0');
  internal::Rng(42).Fill(reinterpret_cast<uint8_t*>(data.data()), data.size());
  want += data;
  EXPECT_EQ(ZipMember(dir.File("r.npz"), "x.npy"), want);
}

TEST(Npz, RoundTripEverySampleWholeFilePerSample) {
  TempDir dir;
  const int64_t nspf = 3, d1 = 16, d2 = 24;  // not square: a transposed read would show
  auto f = Npz(nspf, {d1, d2});
  const std::string path = dir.File("img_0_of_1.npz");
  IoStats gen;
  ASSERT_TRUE(f->Generate(path, 1, gen).ok());
  const uint64_t size = testing::FileSize(path);

  // Expected samples from libzip + the header length numpy would write.
  const std::string x = ZipMember(path, "x.npy");
  const std::string hdr = NpyHeader("|u1", {d1, d2, nspf});
  ASSERT_EQ(x.size(), hdr.size() + d1 * d2 * nspf);
  EXPECT_EQ(x.substr(0, hdr.size()), hdr);
  const std::string y = ZipMember(path, "y.npy");
  const std::string yhdr = NpyHeader("<i8", {nspf});
  ASSERT_EQ(y.size(), yhdr.size() + 8 * nspf);
  EXPECT_EQ(y.substr(0, yhdr.size()), yhdr);
  EXPECT_EQ(y.substr(yhdr.size()), std::string(8 * nspf, '\0'));

  auto r = f->NewSampleReader();
  IoStats st;
  for (uint32_t i = 0; i < nspf; ++i) {
    IoSnapshot before = st.Snapshot();
    auto n = r->ReadSample(path, i, st);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, static_cast<uint64_t>(d1 * d2));
    IoSnapshot after = st.Snapshot();
    EXPECT_EQ(after.bytes - before.bytes, size) << "DLIO's NPZReader reads the whole file for every sample";
    EXPECT_EQ(after.ops - before.ops, 1u);
    EXPECT_EQ(after.files - before.files, 1u);
    EXPECT_EQ(after.samples - before.samples, 1u);
    std::string want;
    for (int64_t e = 0; e < d1 * d2; ++e) want.push_back(x[hdr.size() + e * nspf + i]);
    EXPECT_EQ(r->last_sample(), want) << "sample " << i;
  }
}

TEST(Npz, LargeFileIsReadInChunks) {
  TempDir dir;
  auto f = Npz(9, {1024, 1024});  // 9 MiB of samples: two preads of at most kNpzReadChunk
  const std::string path = dir.File("big.npz");
  IoStats gen, st;
  ASSERT_TRUE(f->Generate(path, 3, gen).ok());
  auto r = f->NewSampleReader();
  auto n = r->ReadSample(path, 8, st);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1024u * 1024u);
  const uint64_t size = testing::FileSize(path);
  EXPECT_EQ(st.Snapshot().bytes, size);
  EXPECT_EQ(st.Snapshot().ops, (size + kNpzReadChunk - 1) / kNpzReadChunk);
}

TEST(Npz, NoHeapAllocationPerSampleOnceWarm) {
  TempDir dir;
  auto f = Npz(4, {32, 32});
  IoStats st;
  ASSERT_TRUE(f->Generate(dir.File("a.npz"), 1, st).ok());
  ASSERT_TRUE(f->Generate(dir.File("b.npz"), 2, st).ok());
  auto r = f->NewSampleReader();
  const std::string a = dir.File("a.npz"), b = dir.File("b.npz");
  ASSERT_TRUE(r->ReadSample(a, 0, st).ok());  // warm-up: the file buffer grows once
  testing::AllocationCounter allocs;
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(r->ReadSample(a, i, st).ok());
    ASSERT_TRUE(r->ReadSample(b, i, st).ok());
  }
  EXPECT_EQ(allocs.count(), 0u);
}

TEST(Npz, ReadsDlioGeneratedFiles) {
  const std::string dir = testing::DlioCase("npz");
  auto files = testing::ReadManifest(dir);
  ASSERT_EQ(files.size(), 4u) << dir;
  auto f = Npz(1, {1});  // the reader takes shapes from the files, not from the options
  auto r = f->NewSampleReader();
  int checked = 0;
  for (const auto& mf : files) {
    const std::string path = dir + "/" + mf.path;
    ASSERT_EQ(testing::FileSize(path), mf.size) << path;
    ASSERT_EQ(mf.samples.size(), 2u) << path;
    for (const auto& ms : mf.samples) {
      IoStats st;
      auto n = r->ReadSample(path, ms.index, st);
      ASSERT_TRUE(n.ok()) << n.status();
      EXPECT_EQ(*n, ms.nbytes) << path << " sample " << ms.index;
      EXPECT_EQ(st.Snapshot().bytes, mf.size) << path;
      std::string_view s = r->last_sample();
      EXPECT_EQ(testing::ByteSum(s), ms.sum) << path << " sample " << ms.index;
      ASSERT_EQ(ms.head.size(), 4u);
      for (size_t k = 0; k < 4; ++k) {
        EXPECT_EQ(static_cast<unsigned char>(s[k]), ms.head[k]) << path << " sample " << ms.index << " head " << k;
      }
      ++checked;
    }
    IoStats st;
    auto oob = r->ReadSample(path, 2, st);
    EXPECT_EQ(oob.status().code(), absl::StatusCode::kOutOfRange);
  }
  EXPECT_EQ(checked, 8);
}

TEST(Npz, OurHeaderMatchesDlioFileHeader) {
  const std::string path = testing::DlioCase("npz") + "/train/img_0_of_4.npz";
  EXPECT_EQ(ZipMember(path, "x.npy").substr(0, 128), NpyHeader("|u1", {64, 64, 2}));
  EXPECT_EQ(ZipMember(path, "y.npy").substr(0, 128), NpyHeader("<i8", {2}));
}

TEST(Npz, ErrorsNameTheFile) {
  TempDir dir;
  auto f = Npz(2, {8, 8});
  auto r = f->NewSampleReader();
  IoStats st;

  auto missing = r->ReadSample(dir.File("nope.npz"), 0, st);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(missing.status().message()).find(dir.File("nope.npz")), std::string::npos);

  const std::string junk = dir.File("junk.npz");
  std::ofstream(junk) << "this is not a zip archive, just some text that is long enough";
  auto bad = r->ReadSample(junk, 0, st);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(std::string(bad.status().message()).find(junk), std::string::npos);

  // A truncated archive (the central directory is gone).
  const std::string good = dir.File("good.npz");
  ASSERT_TRUE(f->Generate(good, 1, st).ok());
  const std::string bytes = Slurp(good);
  const std::string cut = dir.File("cut.npz");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto trunc = r->ReadSample(cut, 0, st);
  EXPECT_FALSE(trunc.ok());
  EXPECT_NE(std::string(trunc.status().message()).find(cut), std::string::npos);

  // A member in a zip method other than stored/deflated (here: the central directory patched to bzip2, 12) is
  // refused, not misread.
  {
    std::string patched = bytes;
    const size_t cd = patched.rfind(std::string("PK\x01\x02", 4), patched.rfind(std::string("PK\x01\x02", 4)) - 1);
    ASSERT_NE(cd, std::string::npos);
    patched[cd + 10] = 12;
    const std::string bz = dir.File("bzip2.npz");
    std::ofstream(bz, std::ios::binary) << patched;
    auto m = r->ReadSample(bz, 0, st);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kUnimplemented) << m.status();
    EXPECT_NE(std::string(m.status().message()).find(bz), std::string::npos);
  }

  // The reader still works after errors.
  EXPECT_TRUE(r->ReadSample(good, 1, st).ok());
}

// compression: zip deflates both members as numpy.savez_compressed does, and the reader inflates x.npy.
TEST(Npz, DeflatedMembersRoundTrip) {
  TempDir dir;
  FormatOptions o;
  o.samples_per_file = 3;
  o.sample_dims = {16, 8};
  o.element_type = "int16";
  o.compression = "zip";
  auto f = MakeFormat("npz", o);
  ASSERT_TRUE(f.ok()) << f.status();
  const std::string path = dir.File("c.npz");
  IoStats gen;
  ASSERT_TRUE((*f)->Generate(path, 4, gen).ok());
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  ASSERT_NE(z, nullptr);
  zip_stat_t zs;
  ASSERT_EQ(zip_stat(z, "x.npy", 0, &zs), 0);
  EXPECT_EQ(zs.comp_method, ZIP_CM_DEFLATE);
  std::string x(zs.size, '\0');
  zip_file_t* zf = zip_fopen(z, "x.npy", 0);
  ASSERT_NE(zf, nullptr);
  ASSERT_EQ(zip_fread(zf, x.data(), x.size()), static_cast<zip_int64_t>(x.size()));
  zip_fclose(zf);
  zip_close(z);
  const std::string hdr = NpyHeader("<i2", {16, 8, 3});
  ASSERT_EQ(x.substr(0, hdr.size()), hdr);

  auto r = (*f)->NewSampleReader();
  IoStats st;
  for (uint32_t i = 0; i < 3; ++i) {
    auto n = r->ReadSample(path, i, st);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 16u * 8u * 2u);
    std::string want;
    for (int e = 0; e < 16 * 8; ++e) want += x.substr(hdr.size() + (e * 3 + i) * 2, 2);
    EXPECT_EQ(r->last_sample(), want) << "sample " << i;
  }
  EXPECT_EQ(st.Snapshot().bytes, 3 * testing::FileSize(path)) << "the compressed file is what is read";
}

TEST(Npz, SurvivesEveryCorruptedByte) {
  TempDir dir;
  auto f = Npz(2, {4, 4});
  const std::string good = dir.File("good.npz"), bad = dir.File("bad.npz");
  IoStats st;
  ASSERT_TRUE(f->Generate(good, 1, st).ok());
  const std::string bytes = Slurp(good);
  auto r = f->NewSampleReader();
  int errors = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (char v : {'\x00', '\xff'}) {
      std::string m = bytes;
      m[i] = v;
      std::ofstream(bad, std::ios::binary | std::ios::trunc) << m;
      for (uint32_t s = 0; s < 2; ++s) {
        auto n = r->ReadSample(bad, s, st);  // must return, ok or not; ASan builds check the reads
        if (!n.ok()) {
          ++errors;
          EXPECT_NE(std::string(n.status().message()).find(bad), std::string::npos) << n.status();
        }
      }
    }
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace dlio
