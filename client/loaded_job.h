// LoadedJob: a job file as one client command holds it: the file's text, read once, and the WorkloadSpec parsed from
// that text with the command's overrides, with the loader's diagnostics (warnings, the keys set, what a run would
// stop at). `submit` and `run` make one and hand it to --explain, the pre-run checks and the submission
// (client.h, coordinator_client.h); none of them takes a path, so none can read or parse the file again, and the
// text submitted to the coordinator is the text that was checked. The MLPerf modes derive each run's job from it
// with WithOverrides(), which parses the held text again with the run's overrides and never reads the file.
//
// Errors (Load, WithOverrides) are InvalidArgument, one line naming the file or the key, as job/workload_spec.h
// words them (a file that cannot be opened, too large, not UTF-8; a bad key or value): every one is bad input, exit
// status 2 (client/render.h).
// Thread-safety: an immutable value once made; copy it freely.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "job/workload_spec.h"

namespace dlio {

class LoadedJob {
 public:
  // Reads `path` (job/workload_spec.h ReadWorkloadFile: a regular file of at most 1 MiB of UTF-8) and loads it
  // with `overrides` and `options` (strict: a "DLIO differs" key is the error; plan_only: --explain's load).
  static absl::StatusOr<LoadedJob> Load(const std::string& path, std::vector<std::string> overrides,
                                        const LoadOptions& options = {});
  // The job loaded from `text` as if read from `path`: what Load() does after reading (tests, a text at hand).
  static absl::StatusOr<LoadedJob> FromText(const std::string& path, std::string text,
                                            std::vector<std::string> overrides, const LoadOptions& options = {});
  // This job with `extra` overrides after its own, parsed from the held text with the same options.
  absl::StatusOr<LoadedJob> WithOverrides(const std::vector<std::string>& extra) const;

  // The job file's path as given on the command line, or where a workload name was found (client/workload_lookup.h):
  // the job's source name.
  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }  // the file's text, sent to the coordinator as it is
  const std::vector<std::string>& overrides() const { return overrides_; }  // in order, as sent
  const LoadOptions& options() const { return options_; }
  const WorkloadSpec& spec() const { return spec_; }
  const LoadDiagnostics& diagnostics() const { return diag_; }

 private:
  LoadedJob() = default;

  std::string path_;
  std::string text_;
  std::vector<std::string> overrides_;
  LoadOptions options_;
  WorkloadSpec spec_;
  LoadDiagnostics diag_;
};

}  // namespace dlio
