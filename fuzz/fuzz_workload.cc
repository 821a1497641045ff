// libFuzzer target: the workload loader (job/workload_spec.h) and --explain's plan (client/explain.h).
//
// Input: one byte of options (bit 0 --strict, bit 1 plan-only as --explain loads, bits 2-7 the fleet), then the job
// file's text, then overrides separated by NUL bytes. Properties checked (abort = a finding):
//  - an error is one non-empty line (it is printed as is, exit 2), except --strict's list: one non-empty line per key
//    where DLIO differs, each carrying the --strict note (job/workload_spec.h);
//  - a job that loads round-trips: LoadWorkload(ToYaml(spec)) succeeds and equals spec (the coordinator ships that
//    text to the agents, which must derive the same plan);
//  - its --explain plan is JSON that serialises (a non-UTF-8 string would throw) and prints as text.
// Run: tests/fuzz/run.sh (bounded, in the suite) or by hand: build/fuzz/bin/fuzz_workload -max_total_time=600 DIR.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "client/explain.h"
#include "job/workload_spec.h"
#include "nlohmann/json.hpp"

namespace {

// The error's shape: one non-empty line; under --strict a FailedPrecondition may list several, each with the note.
bool WellFormedError(const absl::Status& status, bool strict) {
  const std::string m(status.message());
  if (m.empty() || m.find('\r') != std::string::npos) return false;
  if (m.find('\n') == std::string::npos) return true;
  if (!strict || status.code() != absl::StatusCode::kFailedPrecondition) return false;
  size_t start = 0;
  while (start <= m.size()) {  // every line, the last one too
    const size_t end = std::min(m.find('\n', start), m.size());
    const std::string_view line = std::string_view(m).substr(start, end - start);
    if (line.empty() || line.find("(--strict: ") == std::string::npos) return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const std::string in(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t nul = in.find('\0'); parts.size() < 8; nul = in.find('\0', start)) {
    parts.push_back(in.substr(start, nul == std::string::npos ? std::string::npos : nul - start));
    if (nul == std::string::npos) break;
    start = nul + 1;
  }
  const std::string yaml = parts.front();
  const std::vector<std::string> overrides(parts.begin() + 1, parts.end());
  dlio::LoadOptions options;
  options.strict = (flags & 1) != 0;
  options.plan_only = (flags & 2) != 0;
  dlio::LoadDiagnostics diag;
  const absl::StatusOr<dlio::WorkloadSpec> spec = dlio::LoadWorkload(yaml, overrides, "fuzz.yaml", options, &diag);
  if (!spec.ok()) {
    if (!WellFormedError(spec.status(), options.strict)) std::abort();
    return 0;
  }
  const std::string normalised = dlio::ToYaml(*spec);
  dlio::LoadOptions again;
  again.plan_only = options.plan_only;
  const absl::StatusOr<dlio::WorkloadSpec> back = dlio::LoadWorkload(normalised, {}, "normalised", again, nullptr);
  if (!back.ok() || *back != *spec) std::abort();
  dlio::ExplainFleet fleet;
  fleet.agents = 1 + ((flags >> 2) & 3);
  fleet.accelerators_per_agent = 1 + ((flags >> 4) & 15);
  fleet.nodes = {dlio::ExplainNode{"node-0", uint64_t{16} << 30, fleet.agents}};
  const nlohmann::json plan = dlio::ExplainJob(*spec, diag, fleet, "fuzz.yaml");
  (void)plan.dump();
  (void)dlio::ExplainText(plan);
  return 0;
}
