// CheckpointPlan: which files every rank writes for one checkpoint, and how many bytes, as a pure function of the
// model description and the world size. No I/O here; agents and the coordinator compute it independently.
//
// Follows DLIO's sizing (../shared/reference/dlio.md §5):
//  - Transformer parameter count
//      N = 2·V·h + L·(2h + h(h + 2·d_kv) + h² + 3·h·ffn) + h,   d_kv = (h/heads)·kv_heads
//    (embedding + LM head, per layer two norms, QKV with GQA, output projection, gated MLP, final norm).
//  - Layers 0 (embedding), 1..L (transformer), L+1 (LM head), L+2 (final norm). Pipeline stage p holds transformer
//    layers split as evenly as possible (the first L mod PP stages get one more); stage 0 also holds layer 0, the
//    last stage also layers L+1 and L+2. Every tensor of a layer is divided by TP (norms are replicated, as
//    in DLIO's get_layer_parameters) and by DP under ZeRO-3, in elements of model_datatype.
//  - Optimizer state per rank: 3 tensors of (N/(DP·TP·PP) + 5h) elements of optimizer_datatype under ZeRO >= 1;
//    without ZeRO 3 tensors of (N/(TP·PP) + 5h) held only by DP-rank 0.
//  - Writers and file names (DeepSpeed style), relative to checkpoint_folder/global_epoch{E}_step{S}/ :
//      ZeRO 0  : ranks < TP·PP; zero_pp_rank_{dp}_mp_rank_{mp}_model_states.pt + ..._optim_states.pt
//      ZeRO 1/2: every rank zero_pp_rank_{dp}_mp_rank_{mp}_optim_states.pt; DP-rank 0 also the model,
//                model_{mp}_model_states.pt, or with PP > 1 one file per layer layer_{i}-model_{mp}_model_states.pt
//      ZeRO 3  : every rank zero_pp_rank_{dp}_mp_rank_{mp}_model_states.pt + ..._optim_states.pt (PP must be 1)
//    with mp = rank % (TP·PP), dp = rank / (TP·PP), pp_rank = (rank / TP) % PP.
//  - Non-transformer models: one int8 tensor of model_size_bytes on rank 0 only, model_states-0.pt.
//  - DLIO's legacy explicit lists (megatron_deepspeed_LLNL.yaml), as DLIO main's base_checkpointing sizes them, in
//    1-byte elements: with model.layer_parameters every transformer layer of a stage (layers 1..L only: no
//    embedding, LM head or final norm) holds one tensor of N / TP bytes per entry N > 0 (never divided by DP);
//    with model.optimization_groups every writer's optimizer state is two tensors of N bytes per entry N > 0 plus
//    one of their sum (3 x the sum). Either list replaces its half of the transformer formula (the other half stays
//    the formula's for a transformer, none otherwise). With a list, the writers are DLIO's for every model: ZeRO 0
//    ranks < TP·PP, else every rank; a non-transformer model adds model_states-{rank}.pt of model_size_bytes on
//    each writer. Layer files as above (ZeRO 1/2: DP-rank 0, per layer with PP > 1; ZeRO 0/3 one model_states file).
//  - checkpoint.mode subset (CheckpointModel::data > 0): DP is `data`, not world / (TP·PP); the world (at most
//    TP·PP·data ranks, any count) writes the shares of its ranks 0..world-1 of that larger job, as DLIO's subset
//    mode does; ZeRO sharding and the optimizer divide by that DP.
//  - Bounded: the bytes of one checkpoint (every rank's files) at most kMaxCheckpointBytes, the bound the job
//    loader sets on model.model_size_bytes; the transformer keys are each bounded, but not their product (16384
//    layers of hidden_size 2^17 would be 50 PiB, or an int64 overflow with many K/V heads), so the plan refuses
//    more, naming the keys, before computing it in integers.
// Differences from DLIO, on purpose: file sizes are exactly the tensor bytes (torch.save adds a pickle header of a
// few hundred bytes per tensor); DLIO's stage split gives the first (L mod PP) stages an overlapping extra layer,
// ours does not.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "job/workload_spec.h"

namespace dlio {

// The most one checkpoint may write over all ranks: 1 PiB, kMaxModelBytes (job/workload_spec.h), the bound of
// model.model_size_bytes, so that a transformer's checkpoint is bounded like a non-transformer's.
inline constexpr int64_t kMaxCheckpointBytes = kMaxModelBytes;

// Element size of DLIO's model_datatype / optimizer_datatype values (fp16, bf16, fp32, fp64, int8, uint8);
// an error naming `key` for anything else.
absl::StatusOr<int64_t> CheckpointDtypeBytes(const std::string& name, const std::string& key);

struct CheckpointModel {
  bool transformer = false;           // model.type == "transformer"
  int64_t model_size_bytes = 10240;   // non-transformer model state (DLIO's default)
  int64_t model_dtype_bytes = 2;      // fp16
  int64_t optimizer_dtype_bytes = 4;  // fp32
  int64_t num_layers = -1;
  int64_t vocab_size = 32000;
  int64_t hidden_size = 2048;
  int64_t ffn_hidden_size = 8192;
  int64_t num_attention_heads = 32;
  int64_t num_kv_heads = 8;
  int64_t tensor = 1;     // TP
  int64_t pipeline = 1;   // PP
  int64_t zero_stage = 0; // 0..3
  int64_t data = -1;      // checkpoint.mode subset: DP of the whole job (model.parallelism.data); -1 = world/(TP·PP)
  std::vector<int64_t> layer_parameters;     // DLIO's legacy per-layer tensor sizes (bytes, divided by TP)
  std::vector<int64_t> optimization_groups;  // DLIO's legacy optimizer group sizes (bytes; 3 x their sum)
  bool Legacy() const { return !layer_parameters.empty() || !optimization_groups.empty(); }
};

// The model description of a job's model.* keys (transformer iff model.type is "transformer").
absl::StatusOr<CheckpointModel> CheckpointModelFor(const WorkloadSpec& spec);

// N for a transformer (the formula above). Requires hidden_size divisible by num_attention_heads.
int64_t TransformerParameters(const CheckpointModel& m);

struct CheckpointFile {
  std::string name;   // relative to the checkpoint directory global_epoch{E}_step{S}
  int64_t bytes = 0;
};

struct RankCheckpoint {
  std::vector<CheckpointFile> files;  // empty when the rank writes nothing
  int64_t model_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t bytes() const { return model_bytes + optimizer_bytes; }
};

struct CheckpointPlan {
  int64_t parameters = 0;              // N (0 for non-transformer models)
  std::vector<RankCheckpoint> ranks;   // one per rank 0 .. world-1
  int64_t TotalBytes() const;
};

// Errors (one line, naming the key): world not a multiple of TP·PP (subset: more than TP·PP·data), zero_stage outside 0..3, ZeRO-3 with PP > 1,
// non-positive sizes, hidden_size not divisible by num_attention_heads, num_layers < PP for a transformer, a
// checkpoint of more than kMaxCheckpointBytes (naming the transformer keys and both sizes).
absl::StatusOr<CheckpointPlan> MakeCheckpointPlan(const CheckpointModel& m, int64_t world);

// "global_epoch{E}_step{S}": DLIO's per-checkpoint directory name.
std::string CheckpointDirName(int64_t epoch, int64_t step);

// The directory of every save the job makes on `world` ranks, in order (plan/checkpoint_schedule.h: checkpoint-only
// num_checkpoints_write saves; in training the chosen steps of every epoch, or the chosen epochs' ends). Empty
// without workflow.checkpoint, or when the world gets no training step plan (PreRunRefusals says why). Saves are
// never deleted, so a job needs the bytes of all of them. O(saves).
std::vector<std::string> CheckpointSaveDirs(const WorkloadSpec& spec, int64_t world);

}  // namespace dlio
