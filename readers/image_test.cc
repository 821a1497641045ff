#include "readers/image.h"

#include <gtest/gtest.h>
#include <png.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "readers/format.h"
#include "readers/test_util.h"

namespace dlio {
namespace {

using testing::TempDir;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::unique_ptr<Format> Image(const std::string& name, int64_t nspf, int64_t h, int64_t w) {
  FormatOptions o;
  o.samples_per_file = nspf;
  o.sample_dims = {h, w};
  auto f = MakeFormat(name, o);
  EXPECT_TRUE(f.ok()) << f.status();
  return std::move(*f);
}

uint32_t Be32(const std::string& s, size_t off) {
  return (uint32_t{static_cast<uint8_t>(s[off])} << 24) | (uint32_t{static_cast<uint8_t>(s[off + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(s[off + 2])} << 8) | uint32_t{static_cast<uint8_t>(s[off + 3])};
}

// The image is read the way DLIO's ImageReader does: the whole file for every sample index of the file, decoded.
void CheckReads(const Format& f, const std::string& path, int64_t nspf, uint64_t pixels, const std::string& want) {
  auto r = f.NewSampleReader();
  IoStats st;
  const uint64_t size = testing::FileSize(path);
  for (uint32_t i = 0; i < nspf; ++i) {
    IoSnapshot before = st.Snapshot();
    auto n = r->ReadSample(path, i, st);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, pixels);
    IoSnapshot after = st.Snapshot();
    EXPECT_EQ(after.bytes - before.bytes, size);
    EXPECT_EQ(after.ops - before.ops, 1u);
    EXPECT_EQ(after.files - before.files, 1u);
    EXPECT_EQ(after.samples - before.samples, 1u);
    if (!want.empty()) {
      EXPECT_EQ(r->last_sample(), want) << "sample " << i;
    }
  }
}

TEST(Png, OneGrayscaleImagePerFileIhdrIdatIend) {
  TempDir dir;
  const int64_t h = 24, w = 40;  // not square: swapped sides would show
  auto f = Image("png", 3, h, w);
  const std::string path = dir.File("img_0_of_1.png");
  IoStats gen;
  ASSERT_TRUE(f->Generate(path, 3, gen).ok());
  EXPECT_EQ(gen.Snapshot().bytes, testing::FileSize(path));
  EXPECT_EQ(gen.Snapshot().files, 1u);
  EXPECT_EQ(gen.Snapshot().samples, 3u) << "one image stands for the file's samples, as in DLIO";

  const std::string b = Slurp(path);
  ASSERT_EQ(b.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::vector<std::string> chunks;
  for (size_t off = 8; off + 8 <= b.size();) {
    const uint32_t len = Be32(b, off);
    chunks.push_back(b.substr(off + 4, 4));
    if (chunks.size() == 1) {
      EXPECT_EQ(Be32(b, off + 8), w);
      EXPECT_EQ(Be32(b, off + 12), h);
      EXPECT_EQ(b[off + 16], 8) << "bit depth";
      EXPECT_EQ(b[off + 17], 0) << "colour type 0: grayscale";
      EXPECT_EQ(b[off + 20], 0) << "not interlaced";
    }
    off += 12 + len;
  }
  EXPECT_EQ(chunks, (std::vector<std::string>{"IHDR", "IDAT", "IEND"}));

  // Decoded independently with libpng's simplified API.
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&img, path.c_str()));
  img.format = PNG_FORMAT_GRAY;
  std::string pixels(PNG_IMAGE_SIZE(img), '\0');
  ASSERT_TRUE(png_image_finish_read(&img, nullptr, pixels.data(), 0, nullptr));
  ASSERT_EQ(pixels.size(), static_cast<size_t>(h * w));
  CheckReads(*f, path, 3, h * w, pixels);
}

TEST(Jpeg, BaselineGrayscaleJfif) {
  TempDir dir;
  const int64_t h = 24, w = 40;
  auto f = Image("jpeg", 2, h, w);
  const std::string path = dir.File("img_0_of_1.jpeg");
  IoStats gen;
  ASSERT_TRUE(f->Generate(path, 3, gen).ok());
  EXPECT_EQ(gen.Snapshot().bytes, testing::FileSize(path));
  EXPECT_EQ(gen.Snapshot().samples, 2u);
  const std::string b = Slurp(path);
  ASSERT_EQ(b.substr(0, 2), "\xFF\xD8");
  EXPECT_EQ(b.substr(6, 5), std::string("JFIF\0", 5));
  const size_t sof = b.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos) << "baseline (SOF0)";
  EXPECT_EQ(b.find("\xFF\xC2"), std::string::npos) << "not progressive";
  EXPECT_EQ(static_cast<uint8_t>(b[sof + 4]), 8) << "8-bit";
  EXPECT_EQ((static_cast<uint8_t>(b[sof + 5]) << 8) | static_cast<uint8_t>(b[sof + 6]), h);
  EXPECT_EQ((static_cast<uint8_t>(b[sof + 7]) << 8) | static_cast<uint8_t>(b[sof + 8]), w);
  EXPECT_EQ(b[sof + 9], 1) << "one component: grayscale";
  EXPECT_EQ(b.substr(b.size() - 2), "\xFF\xD9");
  CheckReads(*f, path, 2, h * w, "");  // lossy: the Python check compares with Pillow
}

TEST(Png, ReadsDlioGeneratedFiles) {
  EXPECT_EQ(testing::ReadEveryDlioSample(
                "png", "png", [](const testing::ManifestFile& f, const testing::ManifestSample&) { return f.size; }),
            3);
}

TEST(Jpeg, ReadsDlioGeneratedFiles) {
  EXPECT_EQ(testing::ReadEveryDlioSample(
                "jpeg", "jpeg", [](const testing::ManifestFile& f, const testing::ManifestSample&) { return f.size; }),
            3);
}

TEST(Image, NoHeapAllocationPerSampleOnceWarm) {
  TempDir dir;
  for (const char* name : {"png", "jpeg"}) {
    auto f = Image(name, 1, 32, 32);
    IoStats st;
    const std::string path = dir.File(std::string("a.") + name);
    ASSERT_TRUE(f->Generate(path, 1, st).ok());
    auto r = f->NewSampleReader();
    ASSERT_TRUE(r->ReadSample(path, 0, st).ok());
    testing::AllocationCounter allocs;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(r->ReadSample(path, 0, st).ok());
    // libjpeg/libpng allocate per decode with malloc (a library cost, reported apart): count() sees them.
    EXPECT_EQ(allocs.cxx_count(), 0u) << name;
    EXPECT_GT(allocs.count(), 0u) << name << ": the malloc interposition should see the libraries' allocations";
  }
}

TEST(Image, DamagedFilesAreDataLossNamingTheFile) {
  TempDir dir;
  for (const char* name : {"png", "jpeg"}) {
    auto f = Image(name, 1, 16, 16);
    IoStats st;
    const std::string good = dir.File(std::string("good.") + name);
    ASSERT_TRUE(f->Generate(good, 1, st).ok());
    const std::string bytes = Slurp(good);
    auto r = f->NewSampleReader();
    for (const std::string& content : {std::string("not an image"), bytes.substr(0, bytes.size() / 2)}) {
      const std::string bad = dir.File(std::string("bad.") + name);
      std::ofstream(bad, std::ios::binary | std::ios::trunc) << content;
      auto n = r->ReadSample(bad, 0, st);
      if (std::string(name) == "jpeg" && content.size() > 100) continue;  // libjpeg pads a cut-off scan: not an error
      ASSERT_FALSE(n.ok()) << name;
      EXPECT_EQ(n.status().code(), absl::StatusCode::kDataLoss) << n.status();
      EXPECT_NE(std::string(n.status().message()).find(bad), std::string::npos) << n.status();
    }
    EXPECT_TRUE(r->ReadSample(good, 0, st).ok()) << "the reader still works after errors";
  }
}

}  // namespace
}  // namespace dlio
