#include "coordinator/trace_writer.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "results/trace_buffer.h"

namespace dlio {

namespace fs = std::filesystem;

namespace {

// Microseconds with 3 decimals from nanoseconds, exactly (no double rounding of large values).
std::string Micros(int64_t ns) {
  const bool neg = ns < 0;
  const uint64_t a = neg ? static_cast<uint64_t>(-ns) : static_cast<uint64_t>(ns);
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%s%" PRIu64 ".%03" PRIu64, neg ? "-" : "", a / 1000, a % 1000);
  return buf;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

int AgentOf(int rank, const std::vector<AgentInfo>& agents) {
  for (size_t i = 0; i < agents.size(); ++i) {
    if (rank >= agents[i].first_rank && rank < agents[i].first_rank + agents[i].ranks) return static_cast<int>(i);
  }
  return 0;
}

}  // namespace

TraceWriter::TraceWriter(std::string dir, std::string job_id, int64_t start_unix_us)
    : dir_(std::move(dir)), job_id_(std::move(job_id)), origin_ns_(start_unix_us * 1000) {}

TraceWriter::~TraceWriter() {
  if (part_ != nullptr) {
    std::fclose(part_);
    std::error_code ec;
    fs::remove(dir_ + "/trace.events.tmp", ec);
  }
}

absl::Status TraceWriter::AddPhase(const std::string& phase_id, std::vector<RankEpochResult>& ranks,
                                   const std::vector<AgentInfo>& agents) {
  if (part_ == nullptr) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    part_ = std::fopen((dir_ + "/trace.events.tmp").c_str(), "w+");
    if (part_ == nullptr) {
      return absl::InternalError(absl::StrCat("--trace: cannot create '", dir_, "/trace.events.tmp': ",
                                              std::strerror(errno)));
    }
  }
  const std::string phase = JsonString(phase_id);
  for (RankEpochResult& r : ranks) {
    dropped_ += r.trace_dropped;
    std::vector<PackedTraceEvent> ev = UnpackTraceEvents(r.trace_events);
    r.trace_events.clear();
    r.trace_events.shrink_to_fit();
    std::stable_sort(ev.begin(), ev.end(), [](const PackedTraceEvent& a, const PackedTraceEvent& b) {
      return a.tid != b.tid ? a.tid < b.tid : a.start_ns < b.start_ns;
    });
    const int pid = AgentOf(r.rank, agents);
    for (const PackedTraceEvent& e : ev) {
      tracks_[pid].insert(e.tid);
      const TraceKind kind = static_cast<TraceKind>(e.kind);
      std::string line = absl::StrCat(events_ == 0 ? "" : ",\n", "{\"name\":\"", TraceKindName(kind),
                                      "\",\"cat\":\"", kind == TraceKind::kOpen || kind == TraceKind::kRead ? "io" : "step",
                                      "\",\"ph\":\"", kind == TraceKind::kOpen ? "i\",\"s\":\"t" : "X",
                                      "\",\"ts\":", Micros(e.start_ns - origin_ns_));
      if (kind != TraceKind::kOpen) absl::StrAppend(&line, ",\"dur\":", Micros(static_cast<int64_t>(e.dur_ns)));
      absl::StrAppend(&line, ",\"pid\":", pid, ",\"tid\":", e.tid, ",\"args\":{\"phase\":", phase);
      if (kind == TraceKind::kRead || kind == TraceKind::kCheckpointWrite || kind == TraceKind::kCheckpointRead) {
        absl::StrAppend(&line, ",\"bytes\":", e.bytes);
      }
      line += "}}";
      if (std::fwrite(line.data(), 1, line.size(), part_) != line.size()) {
        return absl::InternalError(absl::StrCat("--trace: writing '", dir_, "/trace.events.tmp' failed"));
      }
      ++events_;
    }
  }
  return absl::OkStatus();
}

absl::Status TraceWriter::Finish(const std::vector<AgentInfo>& agents) {
  const std::string tmp = dir_ + "/trace.json.tmp";
  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::FILE* out = std::fopen(tmp.c_str(), "w");
  if (out == nullptr) return absl::InternalError(absl::StrCat("--trace: cannot create '", tmp, "': ", std::strerror(errno)));
  std::string head = "{\"traceEvents\":[\n";
  bool first = true;
  for (const auto& [pid, tids] : tracks_) {
    const std::string name = pid < static_cast<int>(agents.size()) ? agents[pid].name : absl::StrCat("agent ", pid);
    absl::StrAppend(&head, first ? "" : ",\n", "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":", pid,
                    ",\"tid\":0,\"args\":{\"name\":", JsonString(absl::StrCat("agent ", name)), "}}");
    first = false;
    for (uint32_t tid : tids) {
      const uint32_t rank = tid / 1000, k = tid % 1000;
      const std::string tname = k == 0 ? absl::StrCat("rank ", rank) : absl::StrCat("rank ", rank, " loader ", k - 1);
      absl::StrAppend(&head, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":", pid, ",\"tid\":", tid,
                      ",\"args\":{\"name\":", JsonString(tname), "}}", ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":",
                      pid, ",\"tid\":", tid, ",\"args\":{\"sort_index\":", tid, "}}");
    }
  }
  if (events_ > 0 && !first) head += ",\n";
  bool ok = std::fwrite(head.data(), 1, head.size(), out) == head.size();
  if (part_ != nullptr) {
    std::fflush(part_);
    std::rewind(part_);
    char buf[1 << 16];
    size_t n;
    while (ok && (n = std::fread(buf, 1, sizeof(buf), part_)) > 0) ok = std::fwrite(buf, 1, n, out) == n;
  }
  const std::string tail = absl::StrCat("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"job_id\":", JsonString(job_id_),
                                        ",\"start_unix_us\":", origin_ns_ / 1000, ",\"events\":", events_,
                                        ",\"dropped_events\":", dropped_, "}}\n");
  ok = ok && std::fwrite(tail.data(), 1, tail.size(), out) == tail.size();
  ok = (std::fclose(out) == 0) && ok;
  if (!ok) return absl::InternalError(absl::StrCat("--trace: writing '", tmp, "' failed"));
  fs::rename(tmp, path(), ec);
  if (ec) return absl::InternalError(absl::StrCat("--trace: rename to '", path(), "': ", ec.message()));
  return absl::OkStatus();
}

}  // namespace dlio
