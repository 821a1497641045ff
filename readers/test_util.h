// Test helpers for formats_test (not part of dlio::formats): a self-deleting temp dir under /tmp, the location of
// the DLIO-generated test data, and a parser for its MANIFEST.txt (see ../shared/testdata/dlio-generated/README.md).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

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
      s.sum = std::stoull(kv["sum"]);
      std::istringstream h(kv["head"]);
      for (std::string v; std::getline(h, v, ',');) s.head.push_back(std::stoi(v));
      files.back().samples.push_back(s);
    }
  }
  return files;
}

inline uint64_t ByteSum(std::string_view b) {
  uint64_t s = 0;
  for (unsigned char c : b) s += c;
  return s;
}

}  // namespace dlio::testing

namespace dlio::testing {

// Heap allocations made by this thread while an AllocationCounter is alive (the malloc family, hence operator new
// too, is interposed in format_test.cc for the whole test binary; it only counts, then calls glibc's allocator).
class AllocationCounter {
 public:
  AllocationCounter();
  ~AllocationCounter();
  uint64_t count() const;
};

}  // namespace dlio::testing
