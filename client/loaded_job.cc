#include "client/loaded_job.h"

#include <utility>

namespace dlio {

absl::StatusOr<LoadedJob> LoadedJob::Load(const std::string& path, std::vector<std::string> overrides,
                                          const LoadOptions& options) {
  absl::StatusOr<std::string> text = ReadWorkloadFile(path);
  // NotFound (a file that cannot be opened) is bad input like every other problem of the file.
  if (!text.ok()) return absl::InvalidArgumentError(text.status().message());
  return FromText(path, *std::move(text), std::move(overrides), options);
}

absl::StatusOr<LoadedJob> LoadedJob::FromText(const std::string& path, std::string text,
                                              std::vector<std::string> overrides, const LoadOptions& options) {
  LoadedJob job;
  absl::StatusOr<WorkloadSpec> spec = LoadWorkload(text, overrides, path, options, &job.diag_);
  if (!spec.ok()) return absl::InvalidArgumentError(spec.status().message());
  job.path_ = path;
  job.text_ = std::move(text);
  job.overrides_ = std::move(overrides);
  job.options_ = options;
  job.spec_ = *std::move(spec);
  return job;
}

absl::StatusOr<LoadedJob> LoadedJob::WithOverrides(const std::vector<std::string>& extra) const {
  std::vector<std::string> all = overrides_;
  all.insert(all.end(), extra.begin(), extra.end());
  return FromText(path_, text_, std::move(all), options_);
}

}  // namespace dlio
