#include "coordinator/job_store.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace dlio {

namespace {

// Version of the table layout, kept in the `meta` table; a store written by a newer layout is refused. Version 2
// added the `verdict` column, version 3 the `placement` column (JSON: the requested agent names and whether the job
// shares agents); an older store gets them, empty, when opened.
constexpr int kSchemaVersion = 3;

constexpr const char* kColumns =
    "id, seq, state, source_name, workload_yaml, overrides, agents, accelerators_per_agent, wait_for_agents_s, "
    "barrier_timeout_s, submitted_unix_us, started_unix_us, ended_unix_us, agent_names, world, ranks_per_agent, "
    "phase_id, epochs_done, epochs_total, message, has_results, verdict, placement";

std::string ToJsonArray(const std::vector<std::string>& v) { return nlohmann::json(v).dump(); }

std::vector<std::string> FromJsonArray(const nlohmann::json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

std::vector<std::string> FromJsonArray(const unsigned char* text) {
  if (text == nullptr) return {};
  return FromJsonArray(
      nlohmann::json::parse(reinterpret_cast<const char*>(text), nullptr, /*allow_exceptions=*/false));
}

std::string Text(sqlite3_stmt* st, int col) {
  const unsigned char* t = sqlite3_column_text(st, col);
  return t == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(t));
}

// Finalizes a statement on every path.
struct Stmt {
  sqlite3_stmt* st = nullptr;
  ~Stmt() { sqlite3_finalize(st); }
};

}  // namespace

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kQueued: return "queued";
    case JobState::kRunning: return "running";
    case JobState::kSucceeded: return "succeeded";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
    case JobState::kInterrupted: return "interrupted";
  }
  return "unknown";
}

std::optional<JobState> ParseJobState(std::string_view name) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled, JobState::kInterrupted}) {
    if (name == JobStateName(s)) return s;
  }
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                                 nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::InvalidArgumentError(absl::StrCat("--store: cannot open '", path, "': ", msg));
  }
  std::unique_ptr<JobStore> store(new JobStore(path, db));
  MutexLock lk(&store->mu_);
  // Exclusive locking before WAL: the lock is taken by the first write below and held until close, so a second
  // coordinator gets SQLITE_BUSY at once (no busy timeout) and is refused.
  if (absl::Status s = store->Exec("PRAGMA locking_mode=EXCLUSIVE"); !s.ok()) return s;
  if (absl::Status s = store->Exec("BEGIN EXCLUSIVE"); !s.ok()) {
    if (sqlite3_errcode(db) == SQLITE_BUSY) {
      return absl::FailedPreconditionError(
          absl::StrCat("--store: '", path, "' is in use by another coordinator (one store per coordinator)"));
    }
    return s;
  }
  if (absl::Status s = store->Exec("COMMIT"); !s.ok()) return s;
  if (path != ":memory:") {
    if (absl::Status s = store->Exec("PRAGMA journal_mode=WAL"); !s.ok()) return s;
    if (absl::Status s = store->Exec("PRAGMA synchronous=FULL"); !s.ok()) return s;
  }
  if (absl::Status s = store->Exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)"); !s.ok()) {
    return s;
  }
  int found_version = 0;  // 0: a new store
  {
    Stmt q;
    sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema_version'", -1, &q.st, nullptr);
    if (q.st != nullptr && sqlite3_step(q.st) == SQLITE_ROW) {
      const int version = std::atoi(Text(q.st, 0).c_str());
      found_version = version;
      if (version > kSchemaVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat("--store: '", path, "' was written by a newer dlio-coordinator (store layout ", version,
                         ", this build reads up to ", kSchemaVersion, ")"));
      }
    }
  }
  const std::string schema = absl::StrCat(
      "CREATE TABLE IF NOT EXISTS jobs(id TEXT PRIMARY KEY, seq INTEGER NOT NULL, state TEXT NOT NULL, "
      "source_name TEXT, workload_yaml TEXT, overrides TEXT, agents INTEGER, accelerators_per_agent INTEGER, "
      "wait_for_agents_s INTEGER, barrier_timeout_s REAL, submitted_unix_us INTEGER, started_unix_us INTEGER, "
      "ended_unix_us INTEGER, agent_names TEXT, world INTEGER, ranks_per_agent INTEGER, phase_id TEXT, "
      "epochs_done INTEGER, epochs_total INTEGER, message TEXT, has_results INTEGER, verdict TEXT, placement TEXT);"
      "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', '",
      kSchemaVersion, "')");
  if (found_version == 1) {  // layout 1 had no verdict column
    if (absl::Status s = store->Exec("ALTER TABLE jobs ADD COLUMN verdict TEXT"); !s.ok()) return s;
  }
  if (found_version == 1 || found_version == 2) {  // layouts 1 and 2 had no placement column
    if (absl::Status s = store->Exec("ALTER TABLE jobs ADD COLUMN placement TEXT"); !s.ok()) return s;
  }
  if (absl::Status s = store->Exec(schema.c_str()); !s.ok()) return s;
  return store;
}

JobStore::~JobStore() { sqlite3_close(db_); }

absl::Status JobStore::Exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err != nullptr ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return absl::InternalError(absl::StrCat("job store '", path_, "': ", msg));
  }
  return absl::OkStatus();
}

absl::Status JobStore::Error(const char* what) const {
  return absl::InternalError(absl::StrCat("job store '", path_, "': ", what, ": ", sqlite3_errmsg(db_)));
}

absl::Status JobStore::Put(const JobRecord& r) {
  MutexLock lk(&mu_);
  Stmt st;
  const std::string sql = absl::StrCat("INSERT OR REPLACE INTO jobs(", kColumns,
                                       ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st.st, nullptr) != SQLITE_OK) return Error("prepare");
  const std::string overrides = ToJsonArray(r.overrides), agents = ToJsonArray(r.agent_names);
  int i = 0;
  auto text = [&](const std::string& s) {
    sqlite3_bind_text(st.st, ++i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  };
  auto integer = [&](int64_t v) { sqlite3_bind_int64(st.st, ++i, v); };
  text(r.id);
  integer(r.seq);
  text(JobStateName(r.state));
  text(r.source_name);
  text(r.workload_yaml);
  text(overrides);
  integer(r.agents);
  integer(r.accelerators_per_agent);
  integer(r.wait_for_agents_s);
  sqlite3_bind_double(st.st, ++i, r.barrier_timeout_s);
  integer(r.submitted_unix_us);
  integer(r.started_unix_us);
  integer(r.ended_unix_us);
  text(agents);
  integer(r.world);
  integer(r.ranks_per_agent);
  text(r.phase_id);
  integer(r.epochs_done);
  integer(r.epochs_total);
  text(r.message);
  integer(r.has_results ? 1 : 0);
  text(r.verdict_json);
  const std::string placement =
      nlohmann::json{{"agent_names", r.requested_agents}, {"share_agents", r.share_agents}}.dump();
  text(placement);
  if (sqlite3_step(st.st) != SQLITE_DONE) return Error(absl::StrCat("saving job ", r.id).c_str());
  return absl::OkStatus();
}

absl::Status JobStore::Delete(const std::vector<std::string>& ids) {
  if (ids.empty()) return absl::OkStatus();
  MutexLock lk(&mu_);
  if (absl::Status s = Exec("BEGIN"); !s.ok()) return s;
  // The highest submission number ever stored outlives its row (MaxSeq), so numbers are never handed out twice.
  absl::Status status = Exec(
      "INSERT OR REPLACE INTO meta(key, value) SELECT 'max_seq', MAX(COALESCE((SELECT CAST(value AS INTEGER) FROM meta "
      "WHERE key='max_seq'), 0), COALESCE((SELECT MAX(seq) FROM jobs), 0))");
  {
    Stmt st;
    if (status.ok() && sqlite3_prepare_v2(db_, "DELETE FROM jobs WHERE id=?", -1, &st.st, nullptr) != SQLITE_OK) {
      status = Error("prepare");
    }
    for (size_t i = 0; status.ok() && i < ids.size(); ++i) {
      sqlite3_bind_text(st.st, 1, ids[i].data(), static_cast<int>(ids[i].size()), SQLITE_TRANSIENT);
      if (sqlite3_step(st.st) != SQLITE_DONE) status = Error(absl::StrCat("deleting job ", ids[i]).c_str());
      sqlite3_reset(st.st);
    }
  }
  if (!status.ok()) {
    (void)Exec("ROLLBACK");
    return status;
  }
  return Exec("COMMIT");
}

absl::StatusOr<int64_t> JobStore::MaxSeq() const {
  MutexLock lk(&mu_);
  Stmt st;
  if (sqlite3_prepare_v2(db_,
                         "SELECT MAX(COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key='max_seq'), 0), "
                         "COALESCE((SELECT MAX(seq) FROM jobs), 0))",
                         -1, &st.st, nullptr) != SQLITE_OK) {
    return Error("prepare");
  }
  if (sqlite3_step(st.st) != SQLITE_ROW) return Error("reading the highest submission number");
  return sqlite3_column_int64(st.st, 0);
}

absl::StatusOr<std::vector<JobRecord>> JobStore::LoadAll() const {
  MutexLock lk(&mu_);
  Stmt st;
  const std::string sql = absl::StrCat("SELECT ", kColumns, " FROM jobs ORDER BY seq");
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st.st, nullptr) != SQLITE_OK) return Error("prepare");
  std::vector<JobRecord> out;
  int rc;
  while ((rc = sqlite3_step(st.st)) == SQLITE_ROW) {
    JobRecord r;
    int c = 0;
    r.id = Text(st.st, c++);
    r.seq = sqlite3_column_int64(st.st, c++);
    const std::string state = Text(st.st, c++);
    r.source_name = Text(st.st, c++);
    r.workload_yaml = Text(st.st, c++);
    r.overrides = FromJsonArray(sqlite3_column_text(st.st, c++));
    r.agents = sqlite3_column_int(st.st, c++);
    r.accelerators_per_agent = sqlite3_column_int(st.st, c++);
    r.wait_for_agents_s = sqlite3_column_int(st.st, c++);
    r.barrier_timeout_s = sqlite3_column_double(st.st, c++);
    r.submitted_unix_us = sqlite3_column_int64(st.st, c++);
    r.started_unix_us = sqlite3_column_int64(st.st, c++);
    r.ended_unix_us = sqlite3_column_int64(st.st, c++);
    r.agent_names = FromJsonArray(sqlite3_column_text(st.st, c++));
    r.world = sqlite3_column_int(st.st, c++);
    r.ranks_per_agent = sqlite3_column_int(st.st, c++);
    r.phase_id = Text(st.st, c++);
    r.epochs_done = sqlite3_column_int(st.st, c++);
    r.epochs_total = sqlite3_column_int(st.st, c++);
    r.message = Text(st.st, c++);
    r.has_results = sqlite3_column_int(st.st, c++) != 0;
    r.verdict_json = Text(st.st, c++);
    const nlohmann::json placement = nlohmann::json::parse(Text(st.st, c++), nullptr, /*allow_exceptions=*/false);
    if (placement.is_object()) {
      r.requested_agents = FromJsonArray(placement.value("agent_names", nlohmann::json::array()));
      r.share_agents = placement.value("share_agents", false);
    }
    const std::optional<JobState> s = ParseJobState(state);
    if (!s) return absl::DataLossError(absl::StrCat("job store '", path_, "': job ", r.id, " has state '", state, "'"));
    r.state = *s;
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return Error("reading jobs");
  return out;
}

}  // namespace dlio
