#include "client/explain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "plan/checkpoint_plan.h"
#include "plan/epoch_plan.h"
#include "plan/measurement_guards.h"
#include "plan/preflight.h"
#include "results/results.h"
#include "fmt/format.h"

namespace dlio {
namespace {

using json = nlohmann::json;

// Binary units, two decimals: "1.50 GiB".
std::string Human(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (std::abs(bytes) >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, units[u]);
}

// The value a job gives a key (any policy), or nullptr.
const KeyUse* Find(const LoadDiagnostics& diag, const std::string& key) {
  const KeyUse* found = nullptr;
  for (const KeyUse& k : diag.keys) {
    if (k.key == key) found = &k;
  }
  return found;
}

int64_t IntValue(const LoadDiagnostics& diag, const std::string& key, int64_t def) {
  const KeyUse* k = Find(diag, key);
  if (k == nullptr) return def;
  try {
    size_t pos = 0;
    const int64_t v = std::stoll(k->value, &pos);
    return pos == k->value.size() ? v : def;
  } catch (...) {
    return def;
  }
}

bool BoolValue(const LoadDiagnostics& diag, const std::string& key, bool def) {
  const KeyUse* k = Find(diag, key);
  if (k == nullptr) return def;
  const std::string v = absl::AsciiStrToLower(k->value);
  if (v == "true") return true;
  if (v == "false") return false;
  return def;
}

json StepsSection(const absl::StatusOr<int64_t>& steps, int64_t batch, double record_bytes, int64_t per_agent) {
  json j;
  if (!steps.ok()) {
    j["error"] = std::string(steps.status().message());
    return j;
  }
  const int64_t samples = *steps * batch;
  const double bytes = static_cast<double>(samples) * record_bytes;
  j["steps_per_epoch"] = *steps;
  j["batch_size"] = batch;
  j["samples_per_rank_per_epoch"] = samples;
  j["bytes_per_rank_per_epoch"] = std::llround(bytes);
  j["bytes_per_agent_per_epoch"] = std::llround(bytes * static_cast<double>(per_agent));
  return j;
}

json CheckpointSection(const WorkloadSpec& spec, const LoadDiagnostics& diag, int64_t world, int64_t train_steps) {
  json j;
  j["enabled"] = BoolValue(diag, "workflow.checkpoint", false);
  if (!j["enabled"].get<bool>()) return j;
  absl::StatusOr<CheckpointModel> model = CheckpointModelFor(spec);
  if (!model.ok()) {
    j["error"] = std::string(model.status().message());
    return j;
  }
  absl::StatusOr<CheckpointPlan> plan = MakeCheckpointPlan(*model, world);
  if (!plan.ok()) {
    j["error"] = std::string(plan.status().message());
    return j;
  }
  j["model"] = model->transformer ? "transformer" : "model_size_bytes";
  j["parameters"] = plan->parameters;
  json per_rank = json::array();
  json files_per_rank = json::array();
  int64_t writers = 0;
  for (const RankCheckpoint& r : plan->ranks) {
    per_rank.push_back(r.bytes());
    files_per_rank.push_back(r.files.size());
    writers += r.files.empty() ? 0 : 1;
  }
  j["bytes_per_rank"] = per_rank;
  j["files_per_rank"] = files_per_rank;
  j["writing_ranks"] = writers;
  j["bytes_per_checkpoint"] = plan->TotalBytes();
  // How many checkpoints the job writes and reads (dlio.md §5 schedules).
  int64_t writes = 0, reads = 0;
  std::string schedule;
  if (!spec.train) {
    writes = std::max<int64_t>(0, IntValue(diag, "checkpoint.num_checkpoints_write", -1));
    reads = std::max<int64_t>(0, IntValue(diag, "checkpoint.num_checkpoints_read", -1));
    const int64_t pause = IntValue(diag, "checkpoint.time_between_checkpoints", -1);
    schedule = fmt::format("checkpoint-only: write {}, then read {}{}", writes, reads,
                           pause > 0 ? fmt::format(", {} s apart", pause) : "");
  } else {
    const int64_t every_steps = IntValue(diag, "checkpoint.steps_between_checkpoints", -1);
    if (every_steps > 0) {
      writes = spec.epochs * (train_steps / every_steps);
      schedule = fmt::format("every {} steps inside each epoch", every_steps);
    } else {
      const int64_t after = IntValue(diag, "checkpoint.checkpoint_after_epoch", 1);
      const int64_t between = std::max<int64_t>(1, IntValue(diag, "checkpoint.epochs_between_checkpoints", 1));
      for (int64_t e = 1; e <= spec.epochs; ++e) writes += (e >= after && (e - after) % between == 0) ? 1 : 0;
      schedule = fmt::format("after epoch {}, then every {} epochs", after, between);
    }
  }
  j["schedule"] = schedule;
  j["checkpoints_written"] = writes;
  j["checkpoints_read"] = reads;
  j["bytes_written"] = writes * plan->TotalBytes();
  j["bytes_read"] = reads * plan->TotalBytes();
  return j;
}

bool StepsKnown(const json& section) { return section.contains("steps_per_epoch"); }

// Stream mode: samples the fleet reads twice per epoch because some ranks wrap around (plan/epoch_plan.h).
int64_t RereadOnThisFleet(const WorkloadSpec& spec, int64_t world) {
  if (AccessModeFor(spec) != AccessMode::kStream) return 0;
  absl::StatusOr<EpochPlan> plan = EpochPlan::Make(TrainPlanParams(spec, world), 1);
  return plan.ok() ? plan->RereadSamples() : 0;
}

}  // namespace

namespace {

// Demand at 100 % AU: bytes and samples per second per accelerator, agent and fleet.
json DemandSection(const WorkloadSpec& spec, const ExplainFleet& fleet, int64_t world) {
  json d;
  const double step_bytes = static_cast<double>(spec.batch_size) * spec.record_length_bytes;
  const double compute = spec.computation_time.Mean();
  d["bytes_per_step_per_accelerator"] = std::llround(step_bytes);
  d["computation_time_s"] = compute;
  if (const std::optional<double> demand = DemandBytesPerSecondPerAccelerator(spec)) {
    d["bytes_per_second_per_accelerator"] = *demand;
    d["samples_per_second_per_accelerator"] = static_cast<double>(spec.batch_size) / compute;
    d["bytes_per_second_per_agent"] = *demand * static_cast<double>(fleet.accelerators_per_agent);
    d["bytes_per_second_fleet"] = *demand * static_cast<double>(world);
  } else {
    d["note"] = "computation_time is 0: the accelerators demand as fast as storage delivers";
  }
  return d;
}

// The dataset against the nodes' RAM (DLIO's potential_caching, MLPerf's 5x rule); `train` is the train section.
json MemorySection(const WorkloadSpec& spec, const ExplainFleet& fleet, const json& train) {
  json m;
  const double train_bytes =
      static_cast<double>(spec.num_files_train * spec.num_samples_per_file) * spec.record_length_bytes;
  const double eval_bytes =
      static_cast<double>(spec.num_files_eval * spec.num_samples_per_file) * spec.record_length_bytes;
  m["dataset_bytes_train"] = std::llround(train_bytes);
  m["dataset_bytes_eval"] = std::llround(eval_bytes);
  if (!fleet.nodes.empty()) {
    uint64_t total = 0, least = UINT64_MAX;
    for (const ExplainNode& n : fleet.nodes) {
      total += n.memory_bytes;
      least = std::min(least, n.memory_bytes);
    }
    m["nodes"] = fleet.nodes.size();
    m["node_memory_bytes"] = least;
    m["fleet_memory_bytes"] = total;
    m["memory_source"] = fleet.memory_source;
    const json& t = train;
    const double per_agent = t.contains("bytes_per_agent_per_epoch")
                                 ? t["bytes_per_agent_per_epoch"].get<double>()
                                 : train_bytes / static_cast<double>(std::max<int64_t>(1, fleet.agents));
    // DLIO's rule (summary.json potential_caching, per host): a node's share of the data fits in its RAM.
    bool caching = false;
    double node_share = 0;
    for (const ExplainNode& n : fleet.nodes) {
      const double share = per_agent * static_cast<double>(n.agents);
      node_share = std::max(node_share, share);
      caching = caching || share <= static_cast<double>(n.memory_bytes);
    }
    m["bytes_per_node_per_epoch"] = std::llround(node_share);
    m["potential_caching"] = spec.train && caching;
    m["whole_dataset_fits_in_node_ram"] = train_bytes <= static_cast<double>(least);
    // MLPerf Storage: the dataset must be at least 5x the fleet's RAM (each node once).
    m["mlperf_5x_ram_rule_met"] = train_bytes >= 5.0 * static_cast<double>(total);
  } else {
    m["memory_source"] = "unknown";
  }
  return m;
}

}  // namespace

namespace {

// How the agents find the training files (agent/dataset_files.h): derived names (dataset.skip_listing) or a listing.
std::string ListingText(const WorkloadSpec& spec) {
  const int64_t n = spec.num_files_train;
  const std::string why = spec.skip_listing >= 0
                              ? fmt::format("dataset.skip_listing: {}", spec.skip_listing == 1 ? "true" : "false")
                              : fmt::format("dataset.skip_listing unset and {} files {} {}", n,
                                            n >= kSkipListingAutoFiles ? ">=" : "<", kSkipListingAutoFiles);
  if (!spec.SkipsListing(n)) {
    return fmt::format("train/ listed ({}) once for the job by the agent of rank 0, shared with the others as a "
                       "pattern or compressed names ({})", spec.IsS3() ? "ListObjectsV2" : "directory", why);
  }
  const int64_t every = spec.listing_validation_interval;
  const std::string fallback = spec.skip_listing < 0 ? " (listed instead if the first name is missing)" : "";
  return fmt::format("train/ names derived from dataset.file_prefix '{}', not listed ({}){}; {}", spec.file_prefix,
                     why, fallback,
                     every == 0 ? "none checked"
                                : fmt::format("the first, every {}-th and the last checked by {}", every,
                                              spec.IsS3() ? "HEAD" : "stat"));
}

}  // namespace

json ExplainJob(const WorkloadSpec& spec, const LoadDiagnostics& diag, const ExplainFleet& fleet,
                const std::string& source) {
  const int64_t world = std::max<int64_t>(1, fleet.agents * fleet.accelerators_per_agent);
  json j;
  j["job"] = source;
  j["agents"] = fleet.agents;
  j["accelerators_per_agent"] = fleet.accelerators_per_agent;
  j["world"] = world;
  if (!fleet.fleet_note.empty()) j["fleet_note"] = fleet.fleet_note;
  j["format"] = spec.format;
  j["record_length_bytes"] = spec.record_length_bytes;
  if (spec.IsS3()) {  // object storage (docs/object-storage.md): where the objects are; never a credential
    const std::string prefix = spec.S3DataPrefix();
    j["storage"] = json{{"type", "s3"},
                        {"bucket", spec.storage_root},
                        {"train_prefix", (prefix.empty() ? "" : prefix + "/") + "train/"},
                        {"endpoint", spec.s3_endpoint_url.empty() ? "the agents' AWS_ENDPOINT_URL" : spec.s3_endpoint_url}};
    if (!spec.storage_library.empty()) {
      j["storage"]["client"] = fmt::format("the agents' own S3 client (libcurl, SigV4); storage.storage_library '{}' "
                                           "is a label", spec.storage_library);
    }
  }
  j["listing"] = ListingText(spec);

  // Training and evaluation.
  int64_t train_steps = 0;
  if (spec.train) {
    const absl::StatusOr<int64_t> steps = EpochPlan::Steps(TrainPlanParams(spec, world));
    json t = StepsSection(steps, spec.batch_size, spec.record_length_bytes, fleet.accelerators_per_agent);
    t["epochs"] = spec.epochs;
    if (steps.ok()) train_steps = *steps;
    j["train"] = t;
  } else {
    j["train"] = json{{"enabled", false}};
  }
  if (spec.train && spec.evaluation && spec.num_files_eval > 0) {
    json e = StepsSection(EpochPlan::Steps(EvalPlanParams(spec, world)), spec.batch_size_eval, spec.record_length_bytes,
                          fleet.accelerators_per_agent);
    int64_t evals = 0;
    for (int64_t ep = 1; ep <= spec.epochs; ++ep) evals += spec.EvaluatesAfter(ep) ? 1 : 0;
    e["evaluations"] = evals;
    j["eval"] = e;
  }

  j["demand"] = DemandSection(spec, fleet, world);
  j["memory"] = MemorySection(spec, fleet, j["train"]);
  j["checkpoint"] = CheckpointSection(spec, diag, world, train_steps);

  json keys = json::array();
  for (const KeyUse& k : diag.keys) {
    keys.push_back({{"key", k.key}, {"value", k.value}, {"policy", KeyPolicyName(k.policy)}, {"note", k.note}});
  }
  j["keys"] = keys;
  json warnings = json::array();
  for (const WorkloadWarning& w : diag.warnings) warnings.push_back(w.text);
  // What DLIO's metric window will not measure with this fleet's steps (the coordinator warns again at job start).
  const int64_t eval_steps = j.contains("eval") ? j["eval"].value("steps_per_epoch", int64_t{0}) : 0;
  for (const std::string& w : UnmeasuredFigureWarnings(spec, train_steps, eval_steps)) warnings.push_back(w);
  if (spec.train && StepsKnown(j["train"])) {
    if (const int64_t reread = RereadOnThisFleet(spec, world); reread > 0) {
      warnings.push_back(fmt::format(
          "tfrecord: ranks holding fewer files than the others run out of records before the epoch's last step and "
          "read their files again from the start (DLIO's repeat()): {} samples a second time per epoch",
          reread));
    }
  }
  std::vector<GuardNode> guard_nodes;  // in rank order: a node's agents hold consecutive ranks
  for (const ExplainNode& n : fleet.nodes) {
    guard_nodes.push_back({n.name, n.cores, n.memory_bytes, n.agents * fleet.accelerators_per_agent, n.agents});
  }
  for (std::string& w : MeasurementGuards(spec, guard_nodes, world)) warnings.push_back(std::move(w));
  j["warnings"] = warnings;
  j["not_supported"] = diag.not_supported;
  // What the run would refuse on this fleet before starting anything (plan/preflight.h).
  const std::vector<std::string> refusals =
      PreRunRefusals(spec, JobWorld{fleet.agents, fleet.accelerators_per_agent});
  j["refusals"] = refusals;
  j["runnable"] = diag.not_supported.empty() && refusals.empty();
  return j;
}

namespace {

// ExplainText's demand and dataset lines (jobs that train).
void DemandAndMemoryText(const json& p, std::ostream& o) {
  // Binary and decimal: DLIO's "MB/s" are MiB/s, MLPerf's tables use GB/s.
  auto rate = [](double bps) { return fmt::format("{}/s ({:.3g} GB/s)", Human(bps), bps / 1e9); };
  const json& d = p["demand"];
  const json& m = p["memory"];
  o << fmt::format("  demand per accelerator at 100% AU: {} per step / {} s compute",
                   Human(d["bytes_per_step_per_accelerator"].get<double>()), d["computation_time_s"].get<double>());
  if (d.contains("bytes_per_second_per_accelerator")) {
    o << fmt::format(" = {} ({:.1f} samples/s); per agent {}; fleet {}\n",
                     rate(d["bytes_per_second_per_accelerator"].get<double>()),
                     d["samples_per_second_per_accelerator"].get<double>(),
                     rate(d["bytes_per_second_per_agent"].get<double>()),
                     rate(d["bytes_per_second_fleet"].get<double>()));
  } else {
    o << "\n    note: " << d["note"].get<std::string>() << "\n";
  }

  o << fmt::format("  dataset: train {}", Human(m["dataset_bytes_train"].get<double>()));
  if (m["dataset_bytes_eval"].get<int64_t>() > 0) o << ", eval " << Human(m["dataset_bytes_eval"].get<double>());
  if (m.contains("node_memory_bytes")) {
    o << fmt::format("; {} node(s), RAM {} each at least, {} in all ({})\n", m["nodes"].get<int64_t>(),
                     Human(m["node_memory_bytes"].get<double>()), Human(m["fleet_memory_bytes"].get<double>()),
                     m["memory_source"].get<std::string>());
    // Objects are read over the network: there is no client page cache to warn about.
    if (m["potential_caching"].get<bool>() && !p.contains("storage")) {
      o << fmt::format(
          "  warning: potential caching: a node's share of an epoch ({}) fits in its RAM, so reads "
          "after the first epoch may come from the page cache (DLIO's potential_caching)\n",
          Human(m["bytes_per_node_per_epoch"].get<double>()));
    }
    if (!m["mlperf_5x_ram_rule_met"].get<bool>()) {
      o << fmt::format("    note: MLPerf Storage wants a dataset of at least 5x the fleet's RAM ({})\n",
                       Human(5.0 * m["fleet_memory_bytes"].get<double>()));
    }
  } else {
    o << "; node RAM unknown\n";
  }
}

// ExplainText's checkpoint lines.
void CheckpointText(const json& p, std::ostream& o) {
  const json& c = p["checkpoint"];
  if (!c["enabled"].get<bool>()) {
    o << "  checkpoint: off\n";
  } else if (c.contains("error")) {
    o << "  checkpoint: cannot size: " << c["error"].get<std::string>() << "\n";
  } else {
    o << fmt::format(
        "  checkpoint: {} per checkpoint over {} writing rank(s){}; {}; {} written, {} read\n",
        Human(c["bytes_per_checkpoint"].get<double>()), c["writing_ranks"].get<int64_t>(),
        c["parameters"].get<int64_t>() > 0 ? fmt::format(" ({} parameters)", c["parameters"].get<int64_t>()) : "",
        c["schedule"].get<std::string>(), Human(c["bytes_written"].get<double>()),
        Human(c["bytes_read"].get<double>()));
    const json& br = c["bytes_per_rank"];
    const size_t shown = std::min<size_t>(br.size(), 16);
    for (size_t r = 0; r < shown; ++r) {
      o << fmt::format("    rank {}: {} ({} bytes, {} file(s))\n", r, Human(br[r].get<double>()), br[r].get<int64_t>(),
                       c["files_per_rank"][r].get<int64_t>());
    }
    if (br.size() > shown) o << fmt::format("    ... {} more ranks (--json lists all)\n", br.size() - shown);
  }
}

}  // namespace

std::string ExplainText(const json& p) {
  std::ostringstream o;
  o << fmt::format("plan for {} (nothing runs, nothing is written)\n", p["job"].get<std::string>());
  o << fmt::format("  fleet: {} agent(s) x {} accelerator(s) = world {}\n", p["agents"].get<int64_t>(),
                   p["accelerators_per_agent"].get<int64_t>(), p["world"].get<int64_t>());
  if (p.contains("fleet_note")) o << "    note: " << p["fleet_note"].get<std::string>() << "\n";
  // What a run would refuse on this fleet before starting anything comes first.
  for (const json& n : p["refusals"]) o << "  refused on this fleet: " << n.get<std::string>() << "\n";
  // Without training (checkpoint-only jobs) the data lines say nothing; the JSON keeps them.
  const bool trains = !(p["train"].contains("enabled") && !p["train"]["enabled"].get<bool>());
  if (trains) {
    o << fmt::format("  format: {}, record {} ({} bytes, mean)\n", p["format"].get<std::string>(),
                     Human(p["record_length_bytes"].get<double>()), p["record_length_bytes"].get<double>());
  }
  if (p.contains("storage")) {
    const json& st = p["storage"];
    o << fmt::format("  storage: s3 bucket '{}', objects under s3://{}/{} (endpoint {})\n",
                     st["bucket"].get<std::string>(), st["bucket"].get<std::string>(),
                     st["train_prefix"].get<std::string>(), st["endpoint"].get<std::string>());
    if (st.contains("client")) o << "    client: " << st["client"].get<std::string>() << "\n";
  }
  if (trains && p.contains("listing")) o << "  listing: " << p["listing"].get<std::string>() << "\n";
  auto steps = [&](const char* name, const json& s) {
    if (s.contains("enabled") && !s["enabled"].get<bool>()) {
      o << fmt::format("  {}: off\n", name);
      return;
    }
    if (s.contains("error")) {  // one of the refusals printed first
      o << fmt::format("  {}: cannot run on this fleet (refused above)\n", name);
      return;
    }
    o << fmt::format("  {}: {} step(s) per epoch of batch {}; per rank per epoch {} samples, {}; per agent {}", name,
                     s["steps_per_epoch"].get<int64_t>(), s["batch_size"].get<int64_t>(),
                     s["samples_per_rank_per_epoch"].get<int64_t>(), Human(s["bytes_per_rank_per_epoch"].get<double>()),
                     Human(s["bytes_per_agent_per_epoch"].get<double>()));
    if (s.contains("epochs")) o << fmt::format("; {} epoch(s)", s["epochs"].get<int64_t>());
    if (s.contains("evaluations")) o << fmt::format("; {} evaluation(s)", s["evaluations"].get<int64_t>());
    o << "\n";
  };
  steps("train", p["train"]);
  if (p.contains("eval")) steps("eval", p["eval"]);

  if (trains) DemandAndMemoryText(p, o);

  CheckpointText(p, o);

  o << "  keys set by the job (policy):\n";
  for (const json& k : p["keys"]) {
    o << fmt::format("    {} = {}: {}", k["key"].get<std::string>(), k["value"].get<std::string>(),
                     k["policy"].get<std::string>());
    const std::string policy = k["policy"].get<std::string>();
    if (policy != "implemented" && !k["note"].get<std::string>().empty()) {
      o << " (" << k["note"].get<std::string>() << ")";
    }
    o << "\n";
  }
  for (const json& w : p["warnings"]) o << "  warning: " << w.get<std::string>() << "\n";
  for (const json& n : p["not_supported"]) o << "  a run would stop here: " << n.get<std::string>() << "\n";

  return o.str();
}

}  // namespace dlio
