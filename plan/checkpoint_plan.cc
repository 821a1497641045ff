#include "plan/checkpoint_plan.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plan/checkpoint_schedule.h"
#include "plan/epoch_plan.h"

namespace dlio {
namespace {

absl::Status Invalid(const std::string& key, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(key, ": ", why));
}

// Element counts of the tensors of layer `index` (0 .. L+2), before TP/DP division.
struct LayerTensors {
  std::vector<int64_t> split;      // divided by TP
  std::vector<int64_t> replicated; // norms: not divided by TP
};

LayerTensors LayerOf(const CheckpointModel& m, int64_t index) {
  const int64_t h = m.hidden_size;
  const int64_t L = m.num_layers;
  LayerTensors t;
  if (index == 0 || index == L + 1) {
    t.split = {m.vocab_size * h};  // embedding / LM head
  } else if (index == L + 2) {
    t.replicated = {h};  // final norm
  } else {
    // (h / heads) * kv_heads in exact arithmetic, as DLIO's float formula: llama_1t's 25872 / 192 is not whole.
    const int64_t d_kv = h * m.num_kv_heads / m.num_attention_heads;
    t.replicated = {h, h};                                          // input and post-attention norms
    t.split = {h * (h + 2 * d_kv), h * h, 2 * h * m.ffn_hidden_size, h * m.ffn_hidden_size};  // QKV, out, MLP
  }
  return t;
}

// Bytes of layer `index` held by one rank: every tensor divided by TP (norms excepted) and by `shard`.
int64_t LayerBytes(const CheckpointModel& m, int64_t index, int64_t shard) {
  const LayerTensors t = LayerOf(m, index);
  int64_t elements = 0;
  for (int64_t e : t.split) elements += e / m.tensor / shard;
  for (int64_t e : t.replicated) elements += e / shard;
  return elements * m.model_dtype_bytes;
}

// Layers [first, last] of pipeline stage p.
std::pair<int64_t, int64_t> StageLayers(const CheckpointModel& m, int64_t p) {
  const int64_t per = m.num_layers / m.pipeline;
  const int64_t rem = m.num_layers % m.pipeline;
  int64_t first = 1 + p * per + (p < rem ? p : rem);
  int64_t last = first + per + (p < rem ? 1 : 0) - 1;
  if (p == 0) first = 0;
  if (p == m.pipeline - 1) last = m.num_layers + 2;
  return {first, last};
}

}  // namespace

absl::StatusOr<int64_t> CheckpointDtypeBytes(const std::string& name, const std::string& key) {
  if (name == "fp16" || name == "bf16") return 2;
  if (name == "fp32") return 4;
  if (name == "fp64") return 8;
  if (name == "int8" || name == "uint8") return 1;
  return Invalid(key, absl::StrCat("'", name, "' is not one of fp16, bf16, fp32, fp64, int8, uint8"));
}

absl::StatusOr<CheckpointModel> CheckpointModelFor(const WorkloadSpec& spec) {
  CheckpointModel m;
  m.transformer = spec.model_type == "transformer";
  m.model_size_bytes = spec.model_size_bytes;
  auto model_bytes = CheckpointDtypeBytes(spec.model_datatype, "model.model_datatype");
  if (!model_bytes.ok()) return model_bytes.status();
  auto optimizer_bytes = CheckpointDtypeBytes(spec.optimizer_datatype, "model.optimizer_datatype");
  if (!optimizer_bytes.ok()) return optimizer_bytes.status();
  m.model_dtype_bytes = *model_bytes;
  m.optimizer_dtype_bytes = *optimizer_bytes;
  m.num_layers = spec.num_layers;
  m.vocab_size = spec.vocab_size;
  m.hidden_size = spec.hidden_size;
  m.ffn_hidden_size = spec.ffn_hidden_size;
  m.num_attention_heads = spec.num_attention_heads;
  m.num_kv_heads = spec.num_kv_heads;
  m.tensor = spec.parallelism_tensor;
  m.pipeline = spec.parallelism_pipeline;
  m.zero_stage = spec.zero_stage;
  if (spec.checkpoint_mode == "subset") m.data = spec.parallelism_data;
  m.layer_parameters = spec.layer_parameters;
  m.optimization_groups = spec.optimization_groups;
  return m;
}

int64_t TransformerParameters(const CheckpointModel& m) {
  const int64_t h = m.hidden_size;
  const int64_t d_kv = h * m.num_kv_heads / m.num_attention_heads;
  const int64_t per_layer = 2 * h + h * (h + 2 * d_kv) + h * h + 3 * h * m.ffn_hidden_size;
  return 2 * m.vocab_size * h + m.num_layers * per_layer + h;
}

int64_t CheckpointPlan::TotalBytes() const {
  int64_t total = 0;
  for (const RankCheckpoint& r : ranks) total += r.bytes();
  return total;
}

std::string CheckpointDirName(int64_t epoch, int64_t step) {
  return absl::StrCat("global_epoch", epoch, "_step", step);
}

std::vector<std::string> CheckpointSaveDirs(const WorkloadSpec& spec, int64_t world) {
  std::vector<std::string> dirs;
  if (!spec.checkpoint) return dirs;
  if (!spec.train) {
    for (const CheckpointOp& op : CheckpointOnlySequence(spec)) {
      if (!op.load) dirs.push_back(CheckpointDirName(op.epoch, op.step));
    }
    return dirs;
  }
  const absl::StatusOr<int64_t> steps = EpochPlan::Steps(TrainPlanParams(spec, world));
  if (!steps.ok()) return dirs;
  const std::vector<int64_t> in_epoch = CheckpointStepsInEpoch(spec, *steps);
  for (int64_t e = 1; e <= spec.epochs; ++e) {
    for (int64_t s : in_epoch) dirs.push_back(CheckpointDirName(e, s));
    if (CheckpointAfterEpoch(spec, e)) dirs.push_back(CheckpointDirName(e, EpochCheckpointStep(*steps)));
  }
  return dirs;
}

namespace {

// The parallelism of a model on `world` ranks, checked (one line naming the key): default mode, the world is a
// multiple of TP x PP; subset mode, at most the TP x PP x data ranks of the whole job.
absl::Status CheckParallelism(const CheckpointModel& m, int64_t world) {
  if (m.tensor <= 0) return Invalid("model.parallelism.tensor", "must be positive");
  if (m.pipeline <= 0) return Invalid("model.parallelism.pipeline", "must be positive");
  if (m.zero_stage < 0 || m.zero_stage > 3) return Invalid("model.parallelism.zero_stage", "must be 0, 1, 2 or 3");
  if (m.zero_stage == 3 && m.pipeline > 1) {
    return Invalid("model.parallelism.zero_stage", "ZeRO-3 cannot be combined with pipeline parallelism > 1");
  }
  const int64_t mp_size = m.tensor * m.pipeline;
  if (m.data > 0) {
    if (world > mp_size * m.data) {
      return Invalid("model.parallelism.data",
                     absl::StrCat("checkpoint.mode subset: the ", world, " ranks are more than the whole job's tensor x "
                                  "pipeline x data = ", mp_size, " x ", m.data, " = ", mp_size * m.data));
    }
  } else if (world % mp_size != 0) {
    return Invalid("model.parallelism", absl::StrCat("the number of ranks (", world,
                                                     ") must be a multiple of tensor x pipeline (", mp_size, ")"));
  }
  return absl::OkStatus();
}

// The shape of a transformer model, checked (one line naming the key).
absl::Status CheckTransformer(const CheckpointModel& m) {
  if (m.num_layers < m.pipeline) {
    return Invalid("model.num_layers", absl::StrCat("must be at least model.parallelism.pipeline (", m.pipeline,
                                                    ") for a transformer model"));
  }
  if (m.hidden_size <= 0 || m.vocab_size <= 0 || m.ffn_hidden_size <= 0 || m.num_attention_heads <= 0 ||
      m.num_kv_heads <= 0) {
    return Invalid("model.transformer", "vocab_size, hidden_size, ffn_hidden_size and the head counts must be positive");
  }
  if (m.hidden_size * m.num_kv_heads % m.num_attention_heads != 0) {
    return Invalid("model.transformer.hidden_size",
                   "x num_kv_heads must be divisible by num_attention_heads (the K/V width is h / heads x kv_heads)");
  }
  if (m.model_dtype_bytes <= 0 || m.optimizer_dtype_bytes <= 0) {
    return Invalid("model.model_datatype", "element sizes must be positive");
  }
  return absl::OkStatus();
}

// "50.76 PiB": sizes in powers of 1024, as --explain prints a checkpoint.
std::string Binary(long double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  int u = 0;
  while (bytes >= 1024 && u < 8) bytes /= 1024, ++u;
  return absl::StrFormat("%.2Lf %s", bytes, units[u]);
}

// One checkpoint above kMaxCheckpointBytes, refused naming the model's keys (`bytes` the exact size or, when the
// integers could overflow, the floating-point one).
absl::Status TooLarge(const CheckpointModel& m, long double parameters, long double bytes) {
  return Invalid("model.transformer",
                 absl::StrCat("num_layers ", m.num_layers, ", vocab_size ", m.vocab_size, ", hidden_size ",
                              m.hidden_size, ", ffn_hidden_size ", m.ffn_hidden_size, ", num_attention_heads ",
                              m.num_attention_heads, ", num_kv_heads ", m.num_kv_heads, " give ",
                              absl::StrFormat("%.0Lf", parameters), " parameters and ",
                              absl::StrFormat("%.0Lf", bytes), " bytes (", Binary(bytes),
                              ") per checkpoint, more than the ", kMaxCheckpointBytes, " bytes (",
                              Binary(kMaxCheckpointBytes),
                              ") one checkpoint may write (the bound of model.model_size_bytes); lower "
                              "model.num_layers, hidden_size, ffn_hidden_size or vocab_size"));
}

// The transformer's parameters and its checkpoint's bytes in floating point (model states once, three optimizer
// states): every key is bounded but their product is not, and N alone can overflow int64 (2^17 x 2^31 K/V width x
// 2^14 layers). Refused above kMaxCheckpointBytes; below it every integer of the plan fits in int64 with room.
absl::Status CheckBounded(const CheckpointModel& m) {
  const auto ld = [](int64_t v) { return static_cast<long double>(v); };
  const long double h = ld(m.hidden_size);
  const long double d_kv = h * ld(m.num_kv_heads) / ld(m.num_attention_heads);
  const long double per_layer = 2 * h + h * (h + 2 * d_kv) + h * h + 3 * h * ld(m.ffn_hidden_size);
  const long double n = 2 * ld(m.vocab_size) * h + ld(m.num_layers) * per_layer + h;
  const long double bytes = n * ld(m.model_dtype_bytes + 3 * m.optimizer_dtype_bytes);
  if (bytes > static_cast<long double>(kMaxCheckpointBytes)) return TooLarge(m, n, bytes);
  return absl::OkStatus();
}

// DLIO's legacy lists on `world` ranks, bounded like a transformer's checkpoint: every entry is bounded but the
// layers x entries x writers product is not, so it is checked in floating point before any integer sum.
absl::Status CheckLegacyBounded(const CheckpointModel& m, int64_t world) {
  if (!m.Legacy()) return absl::OkStatus();
  long double layer = 0, opt = 0;
  for (int64_t e : m.layer_parameters) layer += static_cast<long double>(e);
  for (int64_t e : m.optimization_groups) opt += static_cast<long double>(e);
  const long double per_writer = static_cast<long double>(std::max<int64_t>(m.num_layers, 0)) * layer + 3 * opt +
                                 static_cast<long double>(m.model_size_bytes);
  const long double bytes = per_writer * static_cast<long double>(world);
  if (bytes <= static_cast<long double>(kMaxCheckpointBytes)) return absl::OkStatus();
  return Invalid("model.layer_parameters",
                 absl::StrCat("with model.optimization_groups, num_layers ", m.num_layers, " and ", world,
                              " ranks gives up to ", absl::StrFormat("%.0Lf", bytes), " bytes (", Binary(bytes),
                              ") per checkpoint, more than the ", kMaxCheckpointBytes, " bytes (",
                              Binary(kMaxCheckpointBytes), ") one checkpoint may write; lower the lists' entries"));
}

// How every rank of the plan is sized: the data-parallel size, the ZeRO-3 shard, the optimizer state per writer,
// and the per-layer bytes (the legacy list's or the formula's).
struct RankSizing {
  int64_t mp_size = 1;
  int64_t dp_size = 1;
  int64_t shard = 1;        // ZeRO-3 divides the formula's layers by DP
  int64_t opt_bytes = 0;    // one optim_states file; 0 = none
  int64_t legacy_layer = -1;  // bytes of every layer from model.layer_parameters; -1 = the formula (transformer)
  bool layers = false;      // the model has layer state at all
};

RankSizing SizingOf(const CheckpointModel& m, int64_t world, int64_t n) {
  RankSizing z;
  z.mp_size = m.tensor * m.pipeline;
  z.dp_size = m.data > 0 ? m.data : world / z.mp_size;
  z.shard = m.zero_stage == 3 ? z.dp_size : 1;
  if (!m.optimization_groups.empty()) {
    for (int64_t g : m.optimization_groups) z.opt_bytes += 3 * g;
  } else if (m.transformer) {
    const int64_t opt_elements =
        (m.zero_stage > 0 ? n / (z.dp_size * z.mp_size) : n / z.mp_size) + 5 * m.hidden_size;
    z.opt_bytes = 3 * opt_elements * m.optimizer_dtype_bytes;
  }
  if (!m.layer_parameters.empty()) {
    z.legacy_layer = 0;
    for (int64_t e : m.layer_parameters) z.legacy_layer += e / m.tensor;
    z.layers = m.num_layers > 0 && z.legacy_layer > 0;
  } else {
    z.layers = m.transformer;
  }
  return z;
}

// The files rank `rank` writes (module comment): DLIO's writers, its non-transformer model state with the legacy
// lists, its layer files and its optimizer file.
void AddRankFiles(const CheckpointModel& m, const RankSizing& z, int64_t rank, RankCheckpoint* r) {
  const int64_t mp = rank % z.mp_size;
  const int64_t dp = rank / z.mp_size;
  if (m.zero_stage == 0 && dp != 0) return;  // only the first DP replica writes
  if (!m.transformer && m.model_size_bytes > 0) {
    r->files.push_back({absl::StrCat("model_states-", rank, ".pt"), m.model_size_bytes});
  }
  const int64_t pp_rank = (rank / m.tensor) % m.pipeline;
  auto [first, last] = StageLayers(m, pp_rank);
  if (z.legacy_layer >= 0) {  // transformer layers only: no embedding, LM head or final norm
    const int64_t per = m.num_layers / m.pipeline, rem = m.num_layers % m.pipeline;
    first = 1 + pp_rank * per + std::min(pp_rank, rem);
    last = first + per + (pp_rank < rem ? 1 : 0) - 1;
  }
  auto layer_bytes = [&](int64_t i, int64_t shard) {
    return z.legacy_layer >= 0 ? z.legacy_layer : LayerBytes(m, i, shard);
  };
  const std::string zero_prefix = absl::StrCat("zero_pp_rank_", dp, "_mp_rank_", mp);
  if (z.layers && last >= first) {
    int64_t stage_bytes = 0;
    for (int64_t i = first; i <= last; ++i) stage_bytes += layer_bytes(i, z.shard);
    if (m.zero_stage == 1 || m.zero_stage == 2) {
      if (dp == 0 && m.pipeline > 1) {
        for (int64_t i = first; i <= last; ++i) {
          r->files.push_back({absl::StrCat("layer_", i, "-model_", mp, "_model_states.pt"), layer_bytes(i, 1)});
        }
      } else if (dp == 0) {
        r->files.push_back({absl::StrCat("model_", mp, "_model_states.pt"), stage_bytes});
      }
    } else {
      r->files.push_back({zero_prefix + "_model_states.pt", stage_bytes});
    }
  }
  if (z.opt_bytes > 0) r->files.push_back({zero_prefix + "_optim_states.pt", z.opt_bytes});
}

}  // namespace

absl::StatusOr<CheckpointPlan> MakeCheckpointPlan(const CheckpointModel& m, int64_t world) {
  if (world <= 0) return Invalid("world", "must be positive");
  CheckpointPlan plan;
  plan.ranks.resize(static_cast<size_t>(world));
  if (!m.transformer && !m.Legacy()) {
    if (m.model_size_bytes < 0) return Invalid("model.model_size_bytes", "must not be negative");
    if (m.model_size_bytes > kMaxCheckpointBytes) {
      return Invalid("model.model_size_bytes", absl::StrCat("must be at most ", kMaxCheckpointBytes, " bytes"));
    }
    if (m.model_size_bytes > 0) {
      plan.ranks[0].files.push_back({"model_states-0.pt", m.model_size_bytes});
      plan.ranks[0].model_bytes = m.model_size_bytes;
    }
    return plan;
  }
  if (absl::Status s = CheckParallelism(m, world); !s.ok()) return s;
  if (m.transformer) {
    if (absl::Status s = CheckTransformer(m); !s.ok()) return s;
    if (absl::Status s = CheckBounded(m); !s.ok()) return s;
  }
  if (absl::Status s = CheckLegacyBounded(m, world); !s.ok()) return s;
  plan.parameters = m.transformer ? TransformerParameters(m) : 0;
  const RankSizing sizing = SizingOf(m, world, plan.parameters);
  for (int64_t rank = 0; rank < world; ++rank) {
    RankCheckpoint& r = plan.ranks[static_cast<size_t>(rank)];
    AddRankFiles(m, sizing, rank, &r);
    for (const CheckpointFile& f : r.files) {
      if (f.name.find("optim_states") != std::string::npos) {
        r.optimizer_bytes += f.bytes;
      } else {
        r.model_bytes += f.bytes;
      }
    }
  }
  if (plan.TotalBytes() > kMaxCheckpointBytes) {
    return TooLarge(m, static_cast<long double>(plan.parameters), static_cast<long double>(plan.TotalBytes()));
  }
  return plan;
}

}  // namespace dlio
