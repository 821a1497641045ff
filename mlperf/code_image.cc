#include "mlperf/code_image.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/host_facts.h"
#include "nlohmann/json.hpp"
#include "results/results.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr size_t kHashHex = 32;  // an MD5 in hex
constexpr size_t kShortHash = 8;  // code-<first 8 hex digits>, as upstream names its images

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The executable that runs the set: its MD5, once per process (it does not change while we run).
const std::string& ExecutableMd5() {
  static const std::string md5 = [] {
    const std::string bytes = ReadAll("/proc/self/exe");
    return bytes.empty() ? std::string("unknown") : Md5Hex(bytes);
  }();
  return md5;
}

// relative path -> MD5 of every file below `dir` but .code-hash.json.
std::map<std::string, std::string> FileSums(const fs::path& dir) {
  std::map<std::string, std::string> sums;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code e;
    if (!it->is_regular_file(e) || it->path().filename() == kCodeHashFile) continue;
    sums[it->path().lexically_relative(dir).generic_string()] = Md5Hex(ReadAll(it->path()));
  }
  return sums;
}

std::string TreeHash(const std::map<std::string, std::string>& sums) {
  std::string text;
  for (const auto& [path, md5] : sums) absl::StrAppend(&text, path, "\n", md5, "\n");
  return Md5Hex(text);
}

int64_t UnixMicrosNow() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ImageName(const std::string& hash) { return absl::StrCat("code-", hash.substr(0, kShortHash)); }

// The image's files (relative path -> content) for this binary and `refs`.
std::map<std::string, std::string> ImageFiles(const std::vector<MlperfReference>& refs) {
  std::map<std::string, std::string> files;
  files["build_info.json"] = json{{"tool", "dlio-cpp"},
                                  {"version", ToolVersion()},
                                  {"git_commit", ToolCommit()},
                                  {"executable", "dlio-coordinator"},
                                  {"executable_md5", ExecutableMd5()}}
                                 .dump(2) +
                             "\n";
  for (const MlperfReference& r : refs) {
    files[absl::StrCat("workloads/", fs::path(r.file).stem().string(), ".yaml")] = r.yaml;
  }
  return files;
}

absl::Status WriteImage(const fs::path& tmp, const std::map<std::string, std::string>& files, const std::string& hash,
                        const std::map<std::string, std::string>& sums) {
  std::error_code ec;
  fs::remove_all(tmp, ec);
  for (const auto& [rel, text] : files) {
    fs::create_directories((tmp / rel).parent_path(), ec);
    if (absl::Status s = WriteFileAtomic((tmp / rel).string(), text); !s.ok()) return s;
  }
  const json meta = {{"hash", hash},
                     {"algorithm", kCodeImageAlgorithm},
                     {"captured_at", FormatTimestamp(UnixMicrosNow())},
                     {"tool_version", ToolVersion()},
                     {"git_sha", ToolCommit()},
                     {"files", sums}};
  return WriteFileAtomic((tmp / kCodeHashFile).string(), meta.dump(2) + "\n");
}

// The hash a pointer file names ("<algorithm>:<32 hex>"), or empty with *why set.
std::string PointerHash(const std::string& text, std::string* why) {
  std::string t(absl::StripAsciiWhitespace(text));
  const std::string prefix = absl::StrCat(kCodeImageAlgorithm, ":");
  const std::string hash = absl::StartsWith(t, prefix) ? t.substr(prefix.size()) : "";
  if (hash.size() == kHashHex && hash.find_first_not_of("0123456789abcdef") == std::string::npos) return hash;
  *why = absl::StrCat("malformed: '", t, "' is not ", kCodeImageAlgorithm, ":<32 hex digits>");
  return "";
}

}  // namespace

std::string Md5Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), md, &n, EVP_md5(), nullptr) != 1) return "";
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) absl::StrAppend(&hex, absl::StrFormat("%02x", md[i]));
  return hex;
}

std::map<std::string, std::string> ReferenceChecksums(const std::vector<MlperfReference>& refs) {
  std::map<std::string, std::string> sums;
  for (const MlperfReference& r : refs) sums[fs::path(r.file).stem().string()] = Md5Hex(r.yaml);
  return sums;
}

absl::StatusOr<std::string> CaptureCodeImage(const fs::path& pool, const std::vector<MlperfReference>& refs) {
  const std::map<std::string, std::string> files = ImageFiles(refs);
  std::map<std::string, std::string> sums;
  for (const auto& [rel, text] : files) sums[rel] = Md5Hex(text);
  const std::string hash = TreeHash(sums);
  const fs::path dir = pool / ImageName(hash);
  std::error_code ec;
  fs::create_directories(pool, ec);
  if (absl::Status s = WriteFileAtomic((pool / kCodePoolSentinel).string(), "dlio-cpp code-image pool\n"); !s.ok()) {
    return s;
  }
  if (fs::exists(dir / kCodeHashFile, ec)) {
    const json have = json::parse(ReadAll(dir / kCodeHashFile), nullptr, false);
    if (have.is_object() && have.value("hash", "") == hash) return hash;
    return absl::InternalError(absl::StrCat("code image '", dir.string(), "': its ", kCodeHashFile,
                                            " does not record hash ", hash, ": remove the folder"));
  }
  const fs::path tmp = pool / absl::StrCat(".", ImageName(hash), ".tmp-", ::getpid());
  if (absl::Status s = WriteImage(tmp, files, hash, sums); !s.ok()) return s;
  fs::rename(tmp, dir, ec);
  if (ec) {  // another set captured the same image first: keep it
    fs::remove_all(tmp, ec);
    if (!fs::exists(dir / kCodeHashFile, ec)) {
      return absl::InternalError(absl::StrCat("code image '", dir.string(), "': could not be created"));
    }
  }
  return hash;
}

absl::Status WriteCodePointer(const fs::path& run_dir, const std::string& hash) {
  return WriteFileAtomic((run_dir / kCodePointerFile).string(), absl::StrCat(kCodeImageAlgorithm, ":", hash, "\n"));
}

namespace {

// The image names ("code-<hash8>") the pointer files below `runs_below` resolve to.
std::set<std::string> PointedImageNames(const fs::path& runs_below) {
  std::set<std::string> names;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(runs_below, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::string why;
    if (it->path().filename() != kCodePointerFile) continue;
    const std::string hash = PointerHash(ReadAll(it->path()), &why);
    if (!hash.empty()) names.insert(ImageName(hash));
  }
  return names;
}

}  // namespace

absl::Status CopyPointedImages(const fs::path& from_pool, const fs::path& runs_below, const fs::path& to_pool) {
  const std::set<std::string> names = PointedImageNames(runs_below);
  if (names.empty()) return absl::OkStatus();
  std::error_code ec;
  fs::create_directories(to_pool, ec);
  fs::copy_file(from_pool / kCodePoolSentinel, to_pool / kCodePoolSentinel, fs::copy_options::overwrite_existing, ec);
  for (const std::string& n : names) {
    if (!fs::exists(from_pool / n, ec) || fs::exists(to_pool / n, ec)) continue;  // CHECK-01 names a missing one
    fs::copy(from_pool / n, to_pool / n, fs::copy_options::recursive, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat("copying the code image '", (from_pool / n).string(), "' to '",
                                              (to_pool / n).string(), "': ", ec.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> PruneUnpointedImages(const fs::path& pool, const fs::path& runs_below) {
  std::vector<std::string> removed;
  std::error_code ec;
  if (!fs::exists(pool / kCodePoolSentinel, ec)) return removed;  // not a pool of ours: nothing is touched
  const std::set<std::string> pointed = PointedImageNames(runs_below);
  for (const fs::directory_entry& e : fs::directory_iterator(pool, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory(ec) || !absl::StartsWith(name, "code-") || pointed.count(name) != 0 ||
        !fs::exists(e.path() / kCodeHashFile, ec)) {
      continue;
    }
    fs::remove_all(e.path(), ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("removing the code image '", e.path().string(), "' no run points at: ", ec.message()));
    }
    removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

namespace {

// CHECK-02, CHECK-03 and 2.1.6 on one image of a pool; `pointed`: the image names the runs' pointers resolve to.
void CheckImage(const fs::path& root, const fs::path& image, const std::set<std::string>& pointed,
                const std::map<std::string, std::string>* shipped, std::vector<CodeImageFinding>* out) {
  const fs::path rel = image.lexically_relative(root);
  const json meta = json::parse(ReadAll(image / kCodeHashFile), nullptr, false);
  if (!meta.is_object() || !meta.contains("hash")) {
    out->push_back({(rel / kCodeHashFile).string(), "CHECK-02", "missing or not JSON: the image's hash is unknown"});
    return;
  }
  const std::string hash = meta.value("hash", "");
  const std::map<std::string, std::string> sums = FileSums(image);
  if (meta.value("algorithm", "") != kCodeImageAlgorithm || TreeHash(sums) != hash) {
    out->push_back({(rel / kCodeHashFile).string(), "CHECK-02",
                    absl::StrCat("the image's files re-hash to ", TreeHash(sums), " (", kCodeImageAlgorithm,
                                 "), not to the recorded ", hash, ": edited after the capture")});
  }
  if (image.filename().string() != ImageName(hash)) {
    out->push_back({rel.string(), "CHECK-02", absl::StrCat("named for another hash than its recorded ", hash,
                                                           " (expected ", ImageName(hash), ")")});
  }
  if (pointed.count(image.filename().string()) == 0) {
    out->push_back({rel.string(), "CHECK-03", "no run folder points at this image (an orphan): remove it"});
  }
  if (shipped == nullptr) return;
  for (const auto& [file, md5] : sums) {
    if (!absl::StartsWith(file, "workloads/")) continue;
    const std::string stem = fs::path(file).stem().string();
    auto it = shipped->find(stem);
    if (it == shipped->end() || it->second != md5) {
      out->push_back({(rel / file).string(), "Rules.md 2.1.6",
                      absl::StrCat("MD5 ", md5, it == shipped->end() ? " of a workload file the round does not ship"
                                                                     : absl::StrCat(" is not the reference checksum ",
                                                                                    it->second, " of ", stem, ".yaml"),
                                   ": the runs were judged against other workload files than the shipped ones")});
    }
  }
}

}  // namespace

std::vector<CodeImageFinding> CheckCodeImages(const fs::path& root, const std::vector<fs::path>& pools,
                                              const std::vector<std::pair<fs::path, fs::path>>& runs,
                                              const std::map<std::string, std::string>* shipped) {
  std::vector<CodeImageFinding> out;
  std::set<std::string> pointed;
  std::error_code ec;
  for (const auto& [dir, pool] : runs) {
    const fs::path ptr = dir / kCodePointerFile;
    if (!fs::exists(root / ptr, ec)) {
      out.push_back({ptr.string(), "CHECK-01", "missing: every run folder points at the code image that produced it"});
      continue;
    }
    std::string why;
    const std::string hash = PointerHash(ReadAll(root / ptr), &why);
    if (hash.empty()) {
      out.push_back({ptr.string(), "CHECK-01", why});
      continue;
    }
    pointed.insert(ImageName(hash));
    const fs::path image = pool / ImageName(hash);
    const json meta = json::parse(ReadAll(root / image / kCodeHashFile), nullptr, false);
    if (!meta.is_object() || meta.value("hash", "") != hash) {
      out.push_back({ptr.string(), "CHECK-01", absl::StrCat("points at ", hash, " but ", image.string(), "/",
                                                            kCodeHashFile, " does not record it: no such image")});
    }
  }
  for (const fs::path& pool : pools) {
    for (auto it = fs::directory_iterator(root / pool, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      if (it->is_directory() && absl::StartsWith(it->path().filename().string(), "code-")) {
        CheckImage(root, it->path(), pointed, shipped, &out);
      }
    }
  }
  return out;
}

}  // namespace dlio
