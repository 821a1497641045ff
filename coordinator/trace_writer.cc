#include "coordinator/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "results/trace_buffer.h"

namespace dlio {

namespace {

// The events written so far, in the job's folder, until Finish() (its ".tmp" keeps it out of `results`).
constexpr char kPart[] = "trace.events.tmp";

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

TraceWriter::TraceWriter(std::shared_ptr<const ConfinedDir> dir, std::string job_id, int64_t start_unix_us)
    : dir_(std::move(dir)), job_id_(std::move(job_id)), origin_ns_(start_unix_us * 1000) {}

TraceWriter::~TraceWriter() {
  if (part_ != nullptr) {
    std::fclose(part_);
    ::unlinkat(dir_->fd(), kPart, 0);
  }
}

absl::Status TraceWriter::AddPhase(const std::string& phase_id, std::vector<RankEpochResult>& ranks,
                                   const std::vector<AgentInfo>& agents) {
  if (part_ == nullptr) {
    // A leftover of a coordinator that died is replaced; the new file is created, never opened through a link.
    ::unlinkat(dir_->fd(), kPart, 0);
    const int fd = ::openat(dir_->fd(), kPart, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    const int err = errno;
    part_ = fd < 0 ? nullptr : ::fdopen(fd, "w+");
    if (part_ == nullptr) {
      if (fd >= 0) ::close(fd);
      ::unlinkat(dir_->fd(), kPart, 0);
      return absl::InternalError(absl::StrCat("--trace: cannot create '", dir_->path(), "/", kPart, "': ",
                                              std::strerror(fd < 0 ? err : errno)));
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
        return absl::InternalError(absl::StrCat("--trace: writing '", dir_->path(), "/", kPart, "' failed"));
      }
      ++events_;
    }
  }
  return absl::OkStatus();
}

absl::Status TraceWriter::Finish(const std::vector<AgentInfo>& agents) {
  absl::StatusOr<AtomicFile> out = AtomicFile::Create(dir_->fd(), "trace.json", path());
  if (!out.ok()) return absl::InternalError(absl::StrCat("--trace: ", out.status().message()));
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
  auto failed = [](const absl::Status& s) { return absl::InternalError(absl::StrCat("--trace: ", s.message())); };
  if (absl::Status s = out->Write(head); !s.ok()) return failed(s);
  if (part_ != nullptr) {
    std::fflush(part_);
    std::rewind(part_);
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), part_)) > 0) {
      if (absl::Status s = out->Write(std::string_view(buf, n)); !s.ok()) return failed(s);
    }
  }
  const std::string tail = absl::StrCat("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"job_id\":", JsonString(job_id_),
                                        ",\"start_unix_us\":", origin_ns_ / 1000, ",\"events\":", events_,
                                        ",\"dropped_events\":", dropped_, "}}\n");
  if (absl::Status s = out->Write(tail); !s.ok()) return failed(s);
  // Not fsync'ed (it never was): a trace is a diagnostic, rewritten whole by the next run.
  if (absl::Status s = out->Commit(/*sync=*/false); !s.ok()) return failed(s);
  return absl::OkStatus();
}

}  // namespace dlio
