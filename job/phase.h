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
  kList,        // list one split's data files once for the job, on one agent (issue 27 item 3; SplitListing)
};

// One split's data files as one agent listed them for the whole job (issue 27 item 3): the answer of a kList phase,
// and what every later order of that split carries, so no other agent lists (agent/split_listing.h builds and reads
// it). The compact form: `pattern` when the sorted names are exactly DLIO's derived names of `count` files
// (`<split>/[<subfolder>/]<file_prefix>_<i>_of_<count>.<ext>`, readers/format.h's DataFileRelPath), else the names
// relative to the split's folder or key prefix, '\n'-joined and zstd-compressed in `names_zstd`. Plus what the
// listing cost, for summary.json's dlio_ext.listing.
struct SplitListing {
  std::string split;           // "train" or "valid"; empty: none (the agent finds its files itself)
  bool pattern = false;
  int64_t count = 0;           // names
  std::string file_prefix;     // pattern: dataset.file_prefix
  int64_t subfolders = 0;      // pattern: num_subfolders_<split>
  std::string ext;             // pattern: the format's extension
  std::string names_zstd;      // !pattern: the names, compressed
  std::string note;            // the listing's one line about files of other layouts left out (may be empty)
  double seconds = 0;          // the listing's wall time on its agent
  uint64_t requests = 0;       // LIST requests (s3) or folders read (files)
  std::string agent;           // the agent that listed
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
  // On a relay of relays (base/barrier_tree.h BuildTree): the groups it relays above barrier_group, lowest first
  // (relays' names, itself first); barrier_relay is then its highest group's parent (its own name: the coordinator).
  std::vector<std::vector<std::string>> barrier_upper;
  // kList: the split to list ("train" or "valid"). kTrainEpoch and kEval: the job's listing of the phase's split
  // (listing.split empty: none; the agent then finds the files itself, as with dataset.skip_listing).
  std::string list_split;
  SplitListing listing;
};

}  // namespace dlio
