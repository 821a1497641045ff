// Test helpers for formats_test (not part of dlio::formats): a self-deleting temp dir under /tmp, the location of
// the DLIO-generated test data, and a parser for its MANIFEST.txt (see ../shared/testdata/dlio-generated/README.md).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/alloc_counter.h"  // testing::AllocationCounter, used by the readers' tests
#include "readers/format.h"

namespace dlio::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/dlio_formats_test.XXXXXX";
    char* p = ::mkdtemp(tmpl.data());
    if (p == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// $DLIO_TESTDATA/dlio-generated/<name>, else <repo>/../shared/testdata/dlio-generated/<name>.
inline std::string DlioCase(const std::string& name) {
  const char* env = std::getenv("DLIO_TESTDATA");
  std::string root = env != nullptr && *env != '\0' ? env : std::string(DLIO_SOURCE_DIR) + "/../shared/testdata";
  return root + "/dlio-generated/" + name;
}

inline uint64_t FileSize(const std::string& path) { return std::filesystem::file_size(path); }

struct ManifestSample {
  uint32_t index = 0;
  uint64_t nbytes = 0;
  uint64_t elements = 0;  // product of `shape`
  bool has_sum = false;   // jpeg sample lines give the shape only
  uint64_t sum = 0;
  std::vector<int> head;
};
struct ManifestFile {
  std::string path;  // relative to the case folder
  uint64_t size = 0;
  std::vector<ManifestSample> samples;
};

inline std::map<std::string, std::string> KeyValues(const std::string& line) {
  std::map<std::string, std::string> kv;
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) {
    size_t eq = tok.find('=');
    if (eq != std::string::npos) kv[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return kv;
}

// The data files (lines "file ... samples=...") with their sample lines.
inline std::vector<ManifestFile> ReadManifest(const std::string& case_dir) {
  std::vector<ManifestFile> files;
  std::ifstream in(case_dir + "/MANIFEST.txt");
  EXPECT_TRUE(in.good()) << "cannot open " << case_dir << "/MANIFEST.txt";
  std::string line;
  while (std::getline(in, line)) {
    std::string_view t(line);
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    if (t.rfind("file ", 0) == 0) {
      auto kv = KeyValues(line);
      if (kv.count("samples") == 0) continue;
      files.push_back({kv["path"], std::stoull(kv["size"]), {}});
    } else if (t.rfind("sample ", 0) == 0 && !files.empty()) {
      auto kv = KeyValues(line);
      ManifestSample s;
      s.index = static_cast<uint32_t>(std::stoul(kv["index"]));
      s.nbytes = std::stoull(kv["nbytes"]);
      s.elements = 1;
      std::istringstream shape(kv["shape"]);
      for (std::string v; std::getline(shape, v, ',');) s.elements *= std::stoull(v);
      s.has_sum = kv.count("sum") > 0;
      if (s.has_sum) s.sum = std::stoull(kv["sum"]);
      std::istringstream h(kv["head"]);
      for (std::string v; std::getline(h, v, ',');) s.head.push_back(std::stoi(v));
      files.back().samples.push_back(s);
    }
  }
  return files;
}

// The `# key=value ...` header fields of a case's MANIFEST.txt (format, num_samples_per_file, total_samples_train...).
inline std::map<std::string, std::string> ManifestHeader(const std::string& case_dir) {
  std::map<std::string, std::string> kv;
  std::ifstream in(case_dir + "/MANIFEST.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) != 0) continue;
    for (auto& [k, v] : KeyValues(line.substr(2))) kv[k] = v;
  }
  return kv;
}

// The bytes this process's read syscalls returned so far (/proc/self/io "rchar": read, pread, readv..., the figure
// strace adds up), as an independent check of a reader's accounting. Reading /proc/self/io is itself a read whose
// bytes land in rchar after the value was taken; ReadBytes() takes that out, so two calls around a piece of code
// that no other thread runs beside differ by exactly that code's read bytes.
class ProcessReads {
 public:
  uint64_t ReadBytes() {
    std::ifstream in("/proc/self/io");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    uint64_t rchar = 0;
    const size_t at = text.find("rchar: ");
    if (at != std::string::npos) rchar = std::stoull(text.substr(at + 7));
    const uint64_t own = pending_;  // the previous probe's read, counted in this value
    pending_ = text.size();
    offset_ += own;
    return rchar - offset_;
  }

 private:
  uint64_t pending_ = 0;
  uint64_t offset_ = 0;
};

inline uint64_t ByteSum(std::string_view b) {
  uint64_t s = 0;
  for (unsigned char c : b) s += c;
  return s;
}

// Reads every sample the MANIFEST of DLIO case `name` lists with a fresh reader of `format` (uint8 options: the
// readers take shapes from the files), and checks: the data files in train/ with the format's extension are exactly
// the MANIFEST's data files (no index file among them); file sizes; samples per file and the total; each sample's
// element count (bytes for uint8), and its byte sum and first 4 values where the MANIFEST gives them. Per sample,
// `bytes_per_read` (when not 0) returns the bytes the read must account. Returns the samples read.
template <typename BytesFn>
int ReadEveryDlioSample(const std::string& name, const std::string& format, BytesFn bytes_per_read,
                        std::string ext = "") {
  if (ext.empty()) ext = format;
  const std::string dir = DlioCase(name);
  const std::vector<ManifestFile> files = ReadManifest(dir);
  auto header = ManifestHeader(dir);
  std::vector<std::string> listed;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/train")) {
    if (e.path().extension() == "." + ext) listed.push_back("train/" + e.path().filename().string());
  }
  std::sort(listed.begin(), listed.end());
  std::vector<std::string> want;
  for (const ManifestFile& f : files) want.push_back(f.path);
  EXPECT_EQ(listed, want) << dir;
  FormatOptions o;
  o.sample_dims = {1, 1};
  auto fmt = MakeFormat(format, o);
  EXPECT_TRUE(fmt.ok()) << fmt.status();
  if (!fmt.ok()) return 0;
  auto r = (*fmt)->NewSampleReader();
  int samples = 0;
  for (const ManifestFile& mf : files) {
    const std::string path = dir + "/" + mf.path;
    EXPECT_EQ(FileSize(path), mf.size) << path;
    EXPECT_EQ(static_cast<int64_t>(mf.samples.size()), std::stoll(header["num_samples_per_file"])) << path;
    for (const ManifestSample& ms : mf.samples) {
      IoStats st;
      auto n = r->ReadSample(path, ms.index, st);
      EXPECT_TRUE(n.ok()) << n.status();
      if (!n.ok()) continue;
      ++samples;
      EXPECT_EQ(*n, ms.elements) << path << " sample " << ms.index;
      const uint64_t expect = bytes_per_read(mf, ms);
      if (expect != 0) {
        EXPECT_EQ(st.Snapshot().bytes, expect) << path << " sample " << ms.index;
      }
      EXPECT_EQ(st.Snapshot().samples, 1u);
      const std::string_view s = r->last_sample();
      EXPECT_EQ(s.size(), ms.elements);
      if (ms.has_sum) {
        EXPECT_EQ(ByteSum(s), ms.sum) << path << " sample " << ms.index;
        for (size_t k = 0; k < ms.head.size() && k < s.size(); ++k) {
          EXPECT_EQ(static_cast<unsigned char>(s[k]), ms.head[k]) << path << " sample " << ms.index << " head " << k;
        }
      }
    }
  }
  EXPECT_EQ(samples, std::stoi(header["total_samples_train"])) << dir;
  return samples;
}

}  // namespace dlio::testing

