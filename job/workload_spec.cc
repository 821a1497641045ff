#include "job/workload_spec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "base/text.h"
#include "fmt/format.h"
#include "job/cross_checks.h"
#include "job/document.h"
#include "job/format_traits.h"
#include "job/key_table.h"
#include "job/workload_fields.h"
#include "job/yaml_scalar.h"
#include "yaml-cpp/yaml.h"

namespace dlio {

using workload_internal::ApplyOverrides;
using workload_internal::AtLine;
using workload_internal::CheckStorage;
using workload_internal::CheckWhole;
using workload_internal::Describe;
using workload_internal::DimsText;
using workload_internal::FlowText;
using workload_internal::Gate;
using workload_internal::KeyInfo;
using workload_internal::Keys;
using workload_internal::KeyStatus;
using workload_internal::Leaf;
using workload_internal::LeafSet;
using workload_internal::MustBe;
using workload_internal::NotSupportedYet;
using workload_internal::ParseBool;
using workload_internal::ParseInt;
using workload_internal::ParseYaml;
using workload_internal::SameValue;
using workload_internal::UnwrapHydra;
using workload_internal::Walk;

namespace {

std::string S3PrefixOf(std::string p) {
  if (p.rfind("s3://", 0) == 0) {
    const size_t slash = p.find('/', 5);
    p = slash == std::string::npos ? "" : p.substr(slash + 1);
  }
  while (p.rfind("./", 0) == 0) p.erase(0, 2);
  while (!p.empty() && p.front() == '/') p.erase(0, 1);
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (p == ".") p.clear();
  return p;
}

}  // namespace

std::string WorkloadSpec::S3DataPrefix() const { return S3PrefixOf(data_folder); }

bool WorkloadSpec::SkipsListing(int64_t count) const {
  return skip_listing >= 0 ? skip_listing == 1 : count >= kSkipListingAutoFiles;
}
std::string WorkloadSpec::S3CheckpointPrefix() const { return S3PrefixOf(checkpoint_folder); }

bool operator==(const WorkloadSpec& a, const WorkloadSpec& b) {
  // Every field but the secret (job/workload_fields.h; the header says why). Doubles compare exactly.
#define DLIO_COMPARE_FIELD(f) \
  if (!(a.f == b.f)) return false;
  DLIO_WORKLOAD_COMPARED_FIELDS(DLIO_COMPARE_FIELD)
#undef DLIO_COMPARE_FIELD
  return true;
}

const char* ShuffleModeName(ShuffleMode m) {
  switch (m) {
    case ShuffleMode::kOff:
      return "off";
    case ShuffleMode::kSeed:
      return "seed";
    case ShuffleMode::kRandom:
      return "random";
  }
  return "off";
}

namespace {

// The text of a job (file and overrides) before it is parsed: sizes and encoding.
absl::Status CheckJobText(const std::string& yaml_text, const std::vector<std::string>& overrides,
                          const std::string& source) {
  if (yaml_text.size() > kMaxWorkloadBytes) {
    return absl::InvalidArgumentError(fmt::format("{}: {} bytes; a job file may have at most {} bytes", source,
                                                  yaml_text.size(), kMaxWorkloadBytes));
  }
  if (!IsValidUtf8(yaml_text)) {
    return absl::InvalidArgumentError(fmt::format("{}: not valid UTF-8 text; a job file must be UTF-8", source));
  }
  if (overrides.size() > kMaxOverrides) {
    return absl::InvalidArgumentError(
        fmt::format("overrides: {} given, at most {} are allowed", overrides.size(), kMaxOverrides));
  }
  for (const std::string& ov : overrides) {
    if (absl::Status s = CheckText(ov, "override", kMaxOverrideBytes); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The keys a job sets: its file's (one YAML document, perhaps in Hydra's form), then its overrides.
absl::Status ReadLeaves(const std::string& yaml_text, const std::vector<std::string>& overrides,
                        const std::string& source, LeafSet* leaves) {
  absl::StatusOr<YAML::Node> doc = ParseYaml(yaml_text, source);
  if (!doc.ok()) return doc.status();
  YAML::Node root = *doc;
  if (!root.IsNull() && !root.IsMap()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: a workload must be a YAML mapping of DLIO keys, got {}", source, Describe(root)));
  }
  if (absl::Status s = UnwrapHydra(&root); !s.ok()) return s;
  if (root.IsMap()) {
    if (absl::Status s = Walk(root, "", "", false, leaves, source); !s.ok()) return s;
  }
  if (leaves->leaves().empty() && overrides.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: the workload is empty (no DLIO key is set); a job file sets at least its dataset, e.g. dataset: "
        "{{format: npz, num_files_train: 8}} (docs/workload-keys.md)",
        source));
  }
  return ApplyOverrides(overrides, leaves);
}

bool IsDlioDefault(const YAML::Node& user, const KeyInfo& k) {
  if (SameValue(user, k.default_node)) return true;
  for (const std::string& alt : k.also_default) {
    if (user.IsScalar() && user.Scalar() == alt) return true;
  }
  return false;
}

// The features whose keys are inert while off.
struct Gates {
  bool checkpoint = false;
  bool Active(Gate g) const {
    switch (g) {
      case Gate::kNone:
        return true;
      case Gate::kCheckpoint:
        return checkpoint;
    }
    return true;
  }
};

absl::Status ReadGates(const LeafSet& leaves, const std::string& source, Gates* g) {
  auto read_bool = [&](const char* path, bool* out) -> absl::Status {
    const Leaf* l = leaves.Find(path);
    if (l == nullptr) return absl::OkStatus();
    if (!ParseBool(l->node, out)) return AtLine(source, l->line, MustBe(l->shown, "true or false", l->node));
    return absl::OkStatus();
  };
  return read_bool("workflow.checkpoint", &g->checkpoint);
}

absl::Status ApplyLeaf(const Leaf& leaf, const Gates& gates, WorkloadSpec* spec) {
  const KeyInfo& k = Keys().keys[Keys().index.at(leaf.path)];
  switch (k.status) {
    case KeyStatus::kImplemented:
    case KeyStatus::kImplementedDiffers:
    case KeyStatus::kLabel:
      if (k.apply) return k.apply(leaf.node, leaf.shown, *spec);
      return absl::OkStatus();
    case KeyStatus::kNotSupported:
      if (!gates.Active(k.gate) || IsDlioDefault(leaf.node, k)) return absl::OkStatus();
      return NotSupportedYet(leaf.shown, k.hint);
  }
  return absl::OkStatus();
}

// The keys that stand for others: model.model_size (or checkpoint.model_size) and reader.odirect.
absl::Status ApplyAliases(const LeafSet& leaves, const std::string& source, WorkloadSpec* spec_ptr) {
  WorkloadSpec& spec = *spec_ptr;
  // model.model_size (or checkpoint.model_size) is the model size unless model_size_bytes is given.
  if (leaves.Find("model.model_size_bytes") == nullptr) {
    for (const char* alias : {"checkpoint.model_size", "model.model_size"}) {
      if (const Leaf* l = leaves.Find(alias)) ParseInt(l->node, &spec.model_size_bytes);
    }
  }
  // reader.odirect (DLIO's key) is dlio_ext.io_engine: odirect; both given and different is a contradiction.
  if (spec.odirect) {
    const Leaf* engine = leaves.Find("dlio_ext.io_engine");
    if (engine != nullptr && spec.io_engine != "odirect") {
      const Leaf* odirect = leaves.Find("reader.odirect");
      return AtLine(source, odirect->line,
                    absl::InvalidArgumentError(fmt::format("{}: true contradicts {}: {} (give one of them)",
                                                           odirect->shown, engine->shown, spec.io_engine)));
    }
    spec.io_engine = "odirect";
  }
  return absl::OkStatus();
}

// Notes on values this version implements where DLIO ignores them (one warning each).
void AddValueNotes(const WorkloadSpec& spec, std::vector<WorkloadWarning>* notes_ptr) {
  std::vector<WorkloadWarning>& notes = *notes_ptr;
  const FormatTraits& format = FormatTraitsOf(spec.format);
  if (spec.enable_chunking && format.chunking) {
    notes.push_back({"dataset.enable_chunking",
        spec.hdf5_chunk_dims.empty()
            ? fmt::format("dataset.enable_chunking: chunks every records dataset by {} here (from dataset.chunk_size "
                          "{}); DLIO parses enable_chunking and chunk_size but ignores them (only "
                          "dataset.hdf5.chunk_dims chunks there)",
                          DimsText(spec.Hdf5ChunkDims()), spec.chunk_size)
            : "dataset.enable_chunking: dataset.hdf5.chunk_dims decides the chunks; DLIO ignores enable_chunking and "
              "chunk_size too"});
  }
  if (spec.format == "npz" && spec.compression == "zip") {
    notes.push_back({"dataset.compression",
                     "dataset.compression: zip deflates the npz members here (numpy.savez_compressed); DLIO compares "
                     "the YAML string with its enum, so its npz files are never compressed"});
  }
  if (*format.dlio_differs != '\0') {
    notes.push_back({"dataset.format", fmt::format("dataset.format: {}", format.dlio_differs)});
  }
  if (spec.checkpoint && spec.checkpoint_type != "rank_zero") {
    notes.push_back({"checkpoint.type",
                     fmt::format("checkpoint.type: {} is a label: which ranks write follows "
                                 "model.parallelism.zero_stage (DLIO parses the key and never reads it either)",
                                 spec.checkpoint_type),
                     false});
  }
}

// The "DLIO differs" lines of the keys the job sets (their features on), then the value notes; one per key, into
// diag.warnings, or, with --strict, the "DLIO differs" ones into *strict_lines (every one of them: the error lists
// them all at once).
void CollectWarnings(const LeafSet& leaves, const Gates& gates, const WorkloadSpec& spec,
                     const std::vector<WorkloadWarning>& notes, const LoadOptions& options, LoadDiagnostics& diag,
                     std::vector<std::string>* strict_lines) {
  std::vector<WorkloadWarning> all;
  for (const Leaf& leaf : leaves.leaves()) {
    const KeyInfo& k = Keys().keys[Keys().index.at(leaf.path)];
    if (!k.differs || !gates.Active(k.gate)) continue;
    const std::string text = k.differs(leaf.node, spec);
    if (!text.empty()) all.push_back({leaf.path, fmt::format("{}: {}", leaf.shown, text), true});
  }
  all.insert(all.end(), notes.begin(), notes.end());
  std::set<std::string> seen;
  for (WorkloadWarning& w : all) {
    if (!seen.insert(w.key).second) continue;
    if (options.strict && w.dlio_differs) {
      strict_lines->push_back(fmt::format("{} (--strict: DLIO behaves differently with this key)", w.text));
      continue;
    }
    diag.warnings.push_back(std::move(w));
  }
}

absl::StatusOr<WorkloadSpec> LoadWorkloadUnchecked(const std::string& yaml_text,
                                                   const std::vector<std::string>& overrides,
                                                   const std::string& source, const LoadOptions& options,
                                                   LoadDiagnostics* diag_out, std::vector<std::string>* strict_lines) {
  LoadDiagnostics local_diag;
  LoadDiagnostics& diag = diag_out != nullptr ? *diag_out : local_diag;
  // plan_only: a "not supported yet" error is noted and the load goes on (the key keeps its default).
  auto tolerate = [&](const absl::Status& s) {
    if (!options.plan_only || s.code() != absl::StatusCode::kUnimplemented) return false;
    diag.not_supported.emplace_back(s.message());
    return true;
  };
  LeafSet leaves;
  if (absl::Status s = ReadLeaves(yaml_text, overrides, source, &leaves); !s.ok()) return s;

  Gates gates;
  if (absl::Status s = ReadGates(leaves, source, &gates); !s.ok()) return s;
  WorkloadSpec spec;
  // workflow.* first, so a job that needs an unsupported feature says so before anything about its details.
  for (int pass = 0; pass < 2; ++pass) {
    for (const Leaf& leaf : leaves.leaves()) {
      if (absl::StartsWith(leaf.path, "workflow.") != (pass == 0)) continue;
      if (absl::Status s = ApplyLeaf(leaf, gates, &spec); !s.ok() && !tolerate(s)) {
        return AtLine(source, leaf.line, s);
      }
    }
  }
  for (const Leaf& leaf : leaves.leaves()) {
    const KeyInfo& k = Keys().keys[Keys().index.at(leaf.path)];
    // A secret's value is never shown (--explain lists the keys a job sets).
    const bool secret = leaf.path == "storage.storage_options.secret_access_key" && !leaf.node.IsNull();
    diag.keys.push_back(KeyUse{leaf.path, secret ? "'***'" : FlowText(leaf.node), k.status, k.note});
  }
  if (absl::Status s = ApplyAliases(leaves, source, &spec); !s.ok()) return s;
  // DLIO's derivations: images are uint8 (DLIO resets the type with a warning), and with record_dims the record
  // length is their byte size (derive_configurations on main).
  std::vector<WorkloadWarning> notes;
  if (FormatTraitsOf(spec.format).image && spec.record_element_type != "uint8") {
    notes.push_back({"dataset.record_element_type",
                     fmt::format("dataset.record_element_type: {} images are uint8; {} is replaced by uint8 (DLIO "
                                 "does the same)",
                                 spec.format, spec.record_element_type),
                     false});
    spec.record_element_type = "uint8";
  }
  if (absl::Status s = CheckWhole(spec); !s.ok() && !tolerate(s)) return s;
  if (absl::Status s = CheckStorage(spec); !s.ok() && !tolerate(s)) return s;
  if (!spec.record_dims.empty()) {
    double bytes = static_cast<double>(ElementBytes(spec.record_element_type));
    for (int64_t d : spec.record_dims) bytes *= static_cast<double>(d);
    spec.record_length_bytes = bytes;
  }
  AddValueNotes(spec, &notes);
  CollectWarnings(leaves, gates, spec, notes, options, diag, strict_lines);
  if (!strict_lines->empty()) return absl::FailedPreconditionError("--strict");  // LoadWorkload words it
  return spec;
}

}  // namespace

absl::StatusOr<WorkloadSpec> LoadWorkload(const std::string& yaml_text, const std::vector<std::string>& overrides,
                                          const std::string& source, const LoadOptions& options,
                                          LoadDiagnostics* diag_out) {
  absl::Status text = CheckJobText(yaml_text, overrides, source);
  std::vector<std::string> strict_lines;
  absl::StatusOr<WorkloadSpec> spec =
      text.ok() ? LoadWorkloadUnchecked(yaml_text, overrides, source, options, diag_out, &strict_lines) : text;
  if (spec.ok()) return spec;
  if (!strict_lines.empty()) {
    // --strict: every key DLIO reads differently at once, one line each (each line escaped on its own).
    std::string lines;
    for (const std::string& line : strict_lines) lines += (lines.empty() ? "" : "\n") + EscapeText(line, 2048);
    return absl::FailedPreconditionError(lines);
  }
  // One line whatever a value or key held (newlines, control characters): errors are printed and logged as is.
  return absl::Status(spec.status().code(), EscapeText(spec.status().message(), 2048));
}

absl::StatusOr<WorkloadSpec> LoadWorkload(const std::string& yaml_text, const std::vector<std::string>& overrides,
                                          const std::string& source, std::vector<std::string>* warnings) {
  LoadDiagnostics diag;
  absl::StatusOr<WorkloadSpec> spec = LoadWorkload(yaml_text, overrides, source, LoadOptions{}, &diag);
  if (spec.ok() && warnings != nullptr) {
    for (const WorkloadWarning& w : diag.warnings) warnings->push_back(w.text);
  }
  return spec;
}

absl::StatusOr<std::string> ReadWorkloadFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type check below refuses it anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    return absl::NotFoundError(fmt::format("{}: cannot read the job file ({})", EscapeText(path), std::strerror(errno)));
  }
  auto fail = [&](const std::string& why) {
    ::close(fd);
    return absl::InvalidArgumentError(fmt::format("{}: {}", EscapeText(path), why));
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(fmt::format("cannot read the job file ({})", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return fail(fmt::format("is {}; a job file must be a regular file", kind));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxWorkloadBytes) {
    return fail(fmt::format("{} bytes; a job file may have at most {} bytes", st.st_size, kMaxWorkloadBytes));
  }
  std::string text;
  char buf[65536];
  for (;;) {  // at most kMaxWorkloadBytes + 1: a file that grew after fstat is still refused
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(fmt::format("cannot read the job file ({})", std::strerror(errno)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxWorkloadBytes) {
      return fail(fmt::format("more than {} bytes; a job file may have at most {} bytes", kMaxWorkloadBytes,
                              kMaxWorkloadBytes));
    }
  }
  ::close(fd);
  if (!IsValidUtf8(text)) return absl::InvalidArgumentError(fmt::format("{}: not valid UTF-8 text; a job file must be UTF-8", EscapeText(path)));
  return text;
}

absl::Status CheckAgentThreads(const WorkloadSpec& spec, int64_t local_ranks) {
  const int64_t per_rank = std::max<int64_t>(1, spec.read_threads);
  if (local_ranks > 0 && per_rank > kMaxLoaderThreadsPerAgent / local_ranks) {
    return absl::InvalidArgumentError(fmt::format(
        "reader.read_threads: {} loader threads x {} ranks on one agent is {} threads, more than the {} an agent "
        "runs; lower reader.read_threads or the accelerators per agent",
        per_rank, local_ranks, per_rank * local_ranks, kMaxLoaderThreadsPerAgent));
  }
  return absl::OkStatus();
}

absl::StatusOr<WorkloadSpec> LoadWorkloadFile(const std::string& path, const std::vector<std::string>& overrides,
                                              std::vector<std::string>* warnings) {
  absl::StatusOr<std::string> text = ReadWorkloadFile(path);
  if (!text.ok()) return text.status();
  return LoadWorkload(*text, overrides, path, warnings);
}

}  // namespace dlio
