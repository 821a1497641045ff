#include "client/baseline.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/ramp.h"
#include "client/render.h"
#include "plan/epoch_plan.h"
#include "results/results.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

absl::StatusOr<json> ReadJson(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return absl::NotFoundError(absl::StrCat(path.string(), ": no such file"));
  try {
    std::ifstream in(path);
    return json::parse(in);
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat(path.string(), ": not JSON: ", e.what()));
  }
}

// Rate per second, 0 for no time.
double Per(double n, double seconds) { return seconds > 0 ? n / seconds : 0.0; }

std::string Rate(double bytes_per_second) {
  return bytes_per_second >= 1e9 ? absl::StrFormat("%.2f GB/s", bytes_per_second / 1e9)
                                 : absl::StrFormat("%.1f MB/s", bytes_per_second / 1e6);
}

// One rank's training epoch 1 from <rank>_output.json: bytes, files, start and end (unix us).
struct RankRead {
  uint64_t bytes = 0, files = 0;
  int64_t start_us = 0, end_us = 0;
};
absl::StatusOr<RankRead> ReadRank(const fs::path& dir, int rank) {
  const fs::path path = dir / absl::StrCat(rank, "_output.json");
  absl::StatusOr<json> j = ReadJson(path);
  if (!j.ok()) return j.status();
  const json e = j->value("1", json());
  if (!e.is_object()) return absl::DataLossError(absl::StrCat(path.string(), ": no epoch 1"));
  RankRead r;
  const json io = e.value("dlio_ext", json::object()).value("io", json::object());
  r.bytes = io.value("bytes", uint64_t{0});
  r.files = io.value("files", uint64_t{0});
  absl::StatusOr<int64_t> start = ParseTimestamp(e.value("start", ""));
  absl::StatusOr<int64_t> end = ParseTimestamp(e.value("end", ""));
  if (!start.ok() || !end.ok()) return absl::DataLossError(absl::StrCat(path.string(), ": epoch 1 has no times"));
  r.start_us = *start;
  r.end_us = *end;
  return r;
}

json Figures(double bytes, double files, double seconds, int threads) {
  return {{"MB_per_second", Per(bytes, seconds) / 1e6},
          {"files_per_second", Per(files, seconds)},
          {"bytes", bytes},
          {"files", files},
          {"seconds", seconds},
          {"threads", threads}};
}

}  // namespace

std::vector<std::string> BaselineOverrides(const WorkloadSpec& spec, int threads) {
  std::vector<std::string> o = {"workflow.train=True",
                                "workflow.evaluation=False",
                                "workflow.checkpoint=False",
                                "train.epochs=1",
                                "train.computation_time=0",
                                "reader.preprocess_time=0",
                                "reader.file_shuffle=off",
                                "reader.sample_shuffle=off",
                                // One file per batch: loader thread k reads batch k, so `threads` files in flight.
                                absl::StrCat("reader.batch_size=", std::max<int64_t>(1, spec.num_samples_per_file)),
                                absl::StrCat("reader.read_threads=", threads),
                                absl::StrCat("reader.prefetch_size=", 2 * threads)};
  // The files' pages dropped before the epoch, so a dataset written or read moments ago comes from the storage.
  if (!spec.IsS3()) o.push_back("dlio_ext.evict_cache=before_training");
  return o;
}

json BaselineDataset(const WorkloadSpec& spec) {
  return {{"storage_type", spec.storage_type},
          {"storage_root", spec.storage_root},
          {"data_folder", spec.data_folder},
          {"format", spec.format},
          {"num_files_train", spec.num_files_train}};
}

absl::StatusOr<json> BaselineJson(const std::string& dir, const WorkloadSpec& spec, int threads,
                                  const std::string& job_id) {
  absl::StatusOr<json> summary = ReadJson(fs::path(dir) / "summary.json");
  if (!summary.ok()) return summary.status();
  const json ext = summary->value("dlio_ext", json::object());
  json agents = json::array();
  double bytes = 0, files = 0;
  int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
  for (const json& a : ext.value("agents", json::array())) {
    const int rank = a.value("first_rank", 0);
    absl::StatusOr<RankRead> r = ReadRank(dir, rank);
    if (!r.ok()) return r.status();
    const double secs = static_cast<double>(r->end_us - r->start_us) / 1e6;
    json row = Figures(static_cast<double>(r->bytes), static_cast<double>(r->files), secs, threads);
    row["name"] = a.value("name", "");
    row["hostname"] = a.value("hostname", "");
    agents.push_back(std::move(row));
    bytes += static_cast<double>(r->bytes);
    files += static_cast<double>(r->files);
    first = std::min(first, r->start_us);
    last = std::max(last, r->end_us);
  }
  if (agents.empty()) return absl::DataLossError(absl::StrCat(dir, "/summary.json: no agents"));
  const double seconds = static_cast<double>(last - first) / 1e6;
  json b = {{"dataset", BaselineDataset(spec)},
            {"job_id", job_id},
            {"threads_per_agent", threads},
            // Whole-file readers read in pieces of this size (storage/io_util.h kWholeFileReadChunk).
            {"block_size_bytes", 8 << 20},
            {"agents", agents},
            {"total", Figures(bytes, files, seconds, threads * static_cast<int>(agents.size()))}};
  if (spec.IsS3()) {
    const json s3 = ext.value("s3", json::object());
    const double gets = s3.value("get", json::object()).value("requests", 0.0) +
                        s3.value("get_range", json::object()).value("requests", 0.0);
    b["s3"] = {{"get_requests", gets}, {"gets_per_second", Per(gets, seconds)}};
  }
  return b;
}

std::string BaselineText(const json& b) {
  std::string s = absl::StrFormat("%-20s %12s %10s %8s\n", "agent", "MB/s", "files/s", "threads");
  const auto row = [&](const std::string& name, const json& f) {
    s += absl::StrFormat("%-20s %12.1f %10.1f %8d\n", name, f.value("MB_per_second", 0.0),
                         f.value("files_per_second", 0.0), f.value("threads", 0));
  };
  for (const json& a : b["agents"]) row(a.value("name", ""), a);
  row("total", b["total"]);
  const json& d = b["dataset"];
  s += absl::StrFormat("plain reader: %s files of %s under %s (%s), %d threads per agent, %d MiB reads\n",
                       d.value("format", ""), absl::StrCat(d.value("num_files_train", 0)),
                       d.value("data_folder", ""), d.value("storage_type", ""), b.value("threads_per_agent", 0),
                       b.value("block_size_bytes", 0) >> 20);
  if (b.contains("s3")) {
    s += absl::StrFormat("S3 endpoint: %.0f GET requests, %.1f GET/s\n", b["s3"].value("get_requests", 0.0),
                         b["s3"].value("gets_per_second", 0.0));
  }
  return s;
}

int RunBaseline(const SubmitOptions& base, const LoadedJob& job, int threads, std::ostream& out, std::ostream& err,
                const std::atomic<bool>* cancel) {
  const fs::path root = !base.output_dir.empty()               ? fs::path(base.output_dir)
                        : !job.spec().output_folder.empty() ? fs::path(job.spec().output_folder)
                                                              : fs::path("baseline");
  const fs::path dir = root / "baseline";
  const bool text = !base.client.json;
  if (text) {
    out << "baseline: a plain reader of " << job.spec().data_folder << " with " << threads
        << " threads per agent, into " << root.string() << "\n"
        << std::flush;
  }
  RunOutcome r = SubmitOne(base, job, BaselineOverrides(job.spec(), threads), /*accelerators_per_agent=*/1,
                           dir.string(), err, cancel);
  if (!r.ok) {
    err << "baseline: the plain reader did not succeed" << (r.job_id.empty() ? "" : " (job " + r.job_id + ")")
        << "\n";
    return r.rc != 0 ? r.rc : 1;
  }
  absl::StatusOr<json> b = BaselineJson(dir.string(), job.spec(), threads, r.job_id);
  absl::Status written = b.ok() ? WriteFileAtomic((root / "baseline.json").string(), b->dump(2) + "\n") : b.status();
  if (!written.ok()) {
    err << "baseline: " << written.message() << "\n";
    return 1;
  }
  if (text) {
    out << BaselineText(*b) << "baseline written to " << (root / "baseline.json").string() << "\n";
  } else {
    out << b->dump(2) << "\n";
  }
  return kExitOk;
}

std::optional<json> FindBaseline(const std::string& file, const std::string& output_dir, const WorkloadSpec& spec,
                                 std::ostream& err) {
  const json want = BaselineDataset(spec);
  if (!file.empty()) {
    absl::StatusOr<json> b = ReadJson(file);
    if (!b.ok()) {
      err << "--baseline-file: " << b.status().message() << "\n";
      return std::nullopt;
    }
    if (b->value("dataset", json()) != want) {
      err << "--baseline-file: '" << file << "' measured " << b->value("dataset", json()).dump() << ", not this job's "
          << want.dump() << "; not cited\n";
      return std::nullopt;
    }
    return *std::move(b);
  }
  if (output_dir.empty()) return std::nullopt;
  fs::path dir = fs::path(output_dir);
  if (!dir.has_filename()) dir = dir.parent_path();  // "out/run1/"
  for (const fs::path& p : {dir / "baseline.json", dir.parent_path() / "baseline.json"}) {
    absl::StatusOr<json> b = ReadJson(p);
    if (b.ok() && b->value("dataset", json()) == want) return *std::move(b);
  }
  return std::nullopt;
}

std::string BaselineCitation(const json& baseline, const WorkloadSpec& spec, int ranks_per_agent) {
  const json agents = baseline.value("agents", json::array());
  const double per_agent = baseline.value("total", json::object()).value("MB_per_second", 0.0) * 1e6 /
                           static_cast<double>(std::max<size_t>(1, agents.size()));
  std::string s;
  if (const std::optional<double> d = DemandBytesPerSecondPerAccelerator(spec); d) {
    s = absl::StrCat("demand ", Rate(*d * std::max(1, ranks_per_agent)), " per agent; ");
  }
  return absl::StrCat(s, "this storage gave a plain reader ", Rate(per_agent), " per agent (baseline ",
                      baseline.value("job_id", ""), ")");
}

void CiteBaseline(const json& baseline, const WorkloadSpec& spec, const std::string& output_dir,
                  JobOutcome* outcome) {
  if (outcome->verdict.limit_line.empty()) return;
  int ranks_per_agent = 1;
  const fs::path summary_path = fs::path(output_dir) / "summary.json";
  absl::StatusOr<json> summary = output_dir.empty() ? absl::NotFoundError("") : ReadJson(summary_path);
  if (summary.ok()) {
    const size_t agents = summary->value("dlio_ext", json::object()).value("agents", json::array()).size();
    const int world = summary->value("num_accelerators", 0);
    if (agents > 0 && world > 0) ranks_per_agent = std::max(1, world / static_cast<int>(agents));
  }
  const std::string cite = BaselineCitation(baseline, spec, ranks_per_agent);
  absl::StrAppend(&outcome->verdict.limit_line, "; ", cite);
  if (!summary.ok()) return;
  json& limit = (*summary)["dlio_ext"]["verdict"]["limit"];
  if (!limit.is_object()) return;
  limit["line"] = outcome->verdict.limit_line;
  limit["baseline"] = {{"job_id", baseline.value("job_id", "")},
                       {"total", baseline.value("total", json::object())},
                       {"agents", baseline.value("agents", json::array()).size()},
                       {"citation", cite}};
  (void)WriteFileAtomic(summary_path.string(), summary->dump(4) + "\n");  // best effort: the terminal has the line
}

}  // namespace dlio
