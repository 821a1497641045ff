// The rows of the key table (key_table.h) for the model, framework and workflow sections, and for output,
// profiling and metric.
#include <tuple>

#include "base/text.h"
#include "job/key_table.h"

namespace dlio::workload_internal {

// DLIO's shipped unet3d/megatron files write model_size (older ones under checkpoint:); DLIO reads only
// model_size_bytes. Here either spelling is the model size (LoadWorkload applies it after the other keys).
KeyInfo ModelSizeAliasKey(const char* path) {
  KeyInfo k = Custom(
      path, KeyStatus::kImplementedDiffers,
      "the non-transformer model size in bytes, as model_size_bytes (which wins if both are set); DLIO ignores "
      "this spelling, so its checkpoint stays model_size_bytes (default 10240 bytes)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec&) {
        int64_t v;
        if (!n.IsNull() && (!ParseInt(n, &v) || v < 0 || v > kMaxModelBytes)) {
          return MustBe(p, fmt::format("an integer in [0, {}] (bytes)", kMaxModelBytes), n);
        }
        return absl::OkStatus();
      },
      nullptr);
  k.dlio_default = "~";
  k.differs = [](const YAML::Node& n, const WorkloadSpec&) -> std::string {
    if (n.IsNull()) return "";
    return fmt::format("{} bytes is the model size here (checkpoint sizing of non-transformer models); DLIO reads "
                       "only model.model_size_bytes and ignores this key, so its checkpoint keeps "
                       "model_size_bytes (10240 bytes by default)",
                       n.Scalar());
  };
  return k;
}

// A list of byte sizes (DLIO's legacy model.optimization_groups and model.layer_parameters): integers in
// [0, kMaxModelBytes], at most kMaxSizeListEntries of them, [] or null for none.
inline constexpr size_t kMaxSizeListEntries = 1024;
KeyInfo SizeListKey(const char* path, std::vector<int64_t> WorkloadSpec::*field, std::string note) {
  KeyInfo k = Custom(
      path, KeyStatus::kImplemented, std::move(note),
      [field](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        const std::string what =
            fmt::format("a list of at most {} integers in [0, {}] (bytes)", kMaxSizeListEntries, kMaxModelBytes);
        std::vector<int64_t> out;
        if (!n.IsNull() && !n.IsSequence()) return MustBe(p, what, n);
        for (const YAML::Node& e : n) {
          int64_t v;
          if (!ParseInt(e, &v) || v < 0 || v > kMaxModelBytes || out.size() >= kMaxSizeListEntries) {
            return MustBe(p, what, n);
          }
          out.push_back(v);
        }
        s.*field = std::move(out);
        return absl::OkStatus();
      },
      [field](const WorkloadSpec& s) { return DimsText(s.*field); });
  k.dlio_default = "[]";
  k.range = fmt::format("list of at most {} integers in [0, {}]", kMaxSizeListEntries, kMaxModelBytes);
  return k;
}

// Data table: model, framework, workflow.
void AddModelKeys(std::vector<KeyInfo>& v) {
  // model
  v.push_back(Custom(
      "model.name", KeyStatus::kLabel, "DLIO uses it in the Hydra run dir",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        if (!n.IsScalar()) return MustBe(p, "a string", n);
        if (absl::Status t = CheckKeyText(n.Scalar(), p, kMaxPathBytes); !t.ok()) return t;
        s.model_name = n.Scalar();
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) { return Quote(s.model_name); }));
  const std::string sizing = "checkpoint sizing (applied with workflow.checkpoint)";
  v.push_back(StringKey("model.type", &WorkloadSpec::model_type, true,
                        "`transformer` switches checkpoint sizing to the transformer formula; " + sizing));
  v.push_back(IntKey("model.model_size_bytes", &WorkloadSpec::model_size_bytes, 0, kMaxModelBytes,
                     "size of the non-transformer model state (rank 0 only); " + sizing));
  v.push_back(ModelSizeAliasKey("model.model_size"));
  for (auto [path, field, def] :
       {std::make_tuple("model.model_datatype", &WorkloadSpec::model_datatype, "fp16"),
        std::make_tuple("model.optimizer_datatype", &WorkloadSpec::optimizer_datatype, "fp32")}) {
    v.push_back(Custom(
        path, KeyStatus::kImplemented,
        std::string("fp16, bf16, fp32, fp64, int8 or uint8 (default ") + def + "); " + sizing,
        [field = field](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
          return ParseChoice(n, p, {"fp16", "bf16", "fp32", "fp64", "int8", "uint8"}, {}, "datatype", &(s.*field));
        },
        [field = field](const WorkloadSpec& s) { return Quote(s.*field); }));
  }
  v.push_back(SizeListKey("model.optimization_groups", &WorkloadSpec::optimization_groups,
                          "DLIO's legacy explicit optimizer state: each entry N > 0 is two tensors of N bytes, plus "
                          "one of their sum, on every rank that writes (3 x the sum per optim_states file); replaces "
                          "the transformer formula's optimizer; " + sizing));
  v.push_back(IntKey("model.num_layers", &WorkloadSpec::num_layers, -1, 16384, "transformer layers; " + sizing));
  v.push_back(SizeListKey("model.layer_parameters", &WorkloadSpec::layer_parameters,
                          "DLIO's legacy explicit layer state: every transformer layer of a rank's pipeline stage "
                          "holds one tensor of N / parallelism.tensor bytes per entry N > 0 (needs num_layers > 0; "
                          "no embedding or LM-head layers); replaces the transformer formula's layers; " + sizing));
  v.push_back(IntKey("model.parallelism.tensor", &WorkloadSpec::parallelism_tensor, 1, 16384, "TP; " + sizing));
  v.push_back(IntKey("model.parallelism.pipeline", &WorkloadSpec::parallelism_pipeline, 1, 16384, "PP; " + sizing));
  v.push_back(IntKey("model.parallelism.data", &WorkloadSpec::parallelism_data, -1, 1 << 24,
                     "DP of the whole job whose share this world writes, used with checkpoint.mode: subset only "
                     "(the world may then be smaller than TP x PP x DP); -1 or default mode: DP = world / (TP x PP); "
                     + sizing));
  v.push_back(IntKey("model.parallelism.zero_stage", &WorkloadSpec::zero_stage, 0, 3,
                     "ZeRO stage: which ranks write which shards; " + sizing));
  v.push_back(IntKey("model.transformer.vocab_size", &WorkloadSpec::vocab_size, 1, 1 << 22, sizing));
  v.push_back(IntKey("model.transformer.hidden_size", &WorkloadSpec::hidden_size, 1, 1 << 17, sizing));
  v.push_back(IntKey("model.transformer.ffn_hidden_size", &WorkloadSpec::ffn_hidden_size, 1, 1 << 19, sizing));
  v.push_back(IntKey("model.transformer.num_attention_heads", &WorkloadSpec::num_attention_heads, 1, 16384, sizing));
  v.push_back(IntKey("model.transformer.num_kv_heads", &WorkloadSpec::num_kv_heads, 1, 16384, sizing));

  // framework
  v.push_back(Custom(
      "framework", KeyStatus::kLabel,
      "tensorflow or pytorch (DLIO's code default is tensorflow, its default.yaml pytorch)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"pytorch", "tensorflow"}, {}, "framework", &s.framework);
      },
      [](const WorkloadSpec& s) { return Quote(s.framework); }));

  // workflow
  v.push_back(BoolKey("workflow.generate_data", &WorkloadSpec::generate_data, "write the dataset first"));
  v.push_back(BoolKey("workflow.train", &WorkloadSpec::train, "run the epoch loop"));
  v.push_back(BoolKey("workflow.evaluation", &WorkloadSpec::evaluation,
                      "evaluate after chosen epochs over valid/ (no step barrier); nothing is read with "
                      "workflow.train false or num_files_eval 0"));
  v.push_back(BoolKey("workflow.checkpoint", &WorkloadSpec::checkpoint,
                      "checkpoints inside training (epoch- or step-based), or checkpoint-only mode with "
                      "workflow.train false (num_checkpoints_write, then num_checkpoints_read)"));
  v.push_back(Label("workflow.profiling", "false",
                    "starts profiling.profiler in DLIO (iostat, darshan, tensorboard); no profiler runs here: the "
                    "agents' /metrics and result files carry the I/O figures"));
  v.push_back(Label("workflow.query", "~", "used by dlio_benchmark_query only"));
  v.push_back(Label("workflow.debug", "~", "appears in bert_v100.yaml; not parsed by DLIO"));
}

// Data table: output, profiling, metric.
void AddOutputKeys(std::vector<KeyInfo>& v) {
  // output
  v.push_back(StringKey("output.folder", &WorkloadSpec::output_folder, true,
                        "empty = not set (DLIO: the Hydra run dir); results go to the coordinator's results dir"));
  v.push_back(Label("output.log_file", "dlio.log", "log file name"));
  v.push_back(IntKey("output.metric.exclude_start_steps", &WorkloadSpec::exclude_start_steps, 0, kMaxSamples,
                     "steps left out at the start of the AU window"));
  v.push_back(IntKey("output.metric.exclude_end_steps", &WorkloadSpec::exclude_end_steps, 0, kMaxSamples,
                     "steps left out at the end of the AU window"));

  // profiling
  v.push_back(Label("profiling.profiler", "iostat", "iostat, darshan, tensorboard, none"));
  v.push_back(Label("profiling.iostat_devices", "[]", "devices for iostat"));

  // metric
  v.push_back(NumberKey("metric.au", &WorkloadSpec::au_threshold, 0, false, 1,
                        "AU pass threshold as a fraction (0.90 = 90 %)"));
}

}  // namespace dlio::workload_internal
