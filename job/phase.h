// The phases of a job, as both sides see them: the kind of a phase (PhaseKind) and the order the coordinator sends
// one agent to run one (PhaseOrder). The coordinator's job runner builds orders and its AgentLink sends them; the
// agent's session receives them and its PhaseRunner runs them (agent/phase_runner.h PhaseCommand: the order plus
// its parsed workload). On the wire an order is the RunPhase message; proto/dlio/v1/convert.h converts both ways.
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlio {

// What a phase does (RunPhase.kind).
enum class PhaseKind {
  kGenerate,    // write this agent's share of the dataset
  kTrainEpoch,  // one training epoch, with the per-step barrier (and any step-based checkpoints)
  kEval,        // one evaluation over valid/ after a training epoch, without a step barrier
  kCheckpoint,  // save or load one checkpoint (epoch-based or checkpoint-only mode)
};

// What the coordinator asks one agent to run (the RunPhase message).
struct PhaseOrder {
  std::string job_id;
  std::string phase_id;        // unique within the job: "generate", "train-epoch-3", ...
  PhaseKind kind = PhaseKind::kTrainEpoch;
  std::string workload_yaml;   // normalised, WorkloadSpec::ToYaml()
  int world = 1;               // ranks in the job
  int first_rank = 0;          // this agent's local ranks are first_rank .. first_rank + local_ranks - 1
  int local_ranks = 1;
  // kTrainEpoch: the 1-based epoch; kEval: the epoch the evaluation follows; kCheckpoint: the epoch of the
  // checkpoint's name; kGenerate: 0.
  int epoch = 0;
  int num_agents = 1;
  int agent_index = 0;         // 0-based, among the job's agents
  // Checkpoints (plan/checkpoint_schedule.h): kCheckpoint saves (or loads) global_epoch{epoch}_step{step} as
  // save (load) number checkpoint_index; kTrainEpoch numbers its step-based saves from checkpoint_index.
  bool checkpoint_load = false;
  int checkpoint_index = 1;
  int64_t checkpoint_step = 0;
  std::string s3_secret_access_key;  // the job's S3 secret, beside the workload (never inside it)
  bool share_agent = false;    // the job runs with --share-agents: other sharing jobs may run on this agent too
  // kTrainEpoch over a relay tree (base/barrier_tree.h; RunPhase.barrier_tree): the agent's relay (its own name on a
  // relay) and its listener; on a relay, its group in placement order, itself included. Empty = the flat star.
  std::string barrier_relay;
  std::string barrier_relay_endpoint;
  std::string barrier_relay_tls_name;  // the name in the relay's TLS certificate; empty = its listener is plaintext
  std::vector<std::string> barrier_group;
};

}  // namespace dlio
