// Agent identity: the agent's name (unique in the fleet) and its node name (what `num_hosts` counts), from the
// command line or the environment a launcher gives it.
//
// Name: --name, else SLURMD_NODENAME (Slurm), with "-<SLURM_LOCALID>" appended when Slurm runs several tasks of the
// step on this node, else POD_NAME (Kubernetes, set by the chart through the downward API), else the host name.
// Node: --node-name, else SLURMD_NODENAME, else NODE_NAME (Kubernetes: spec.nodeName through the downward API; a
// pod's host name is the pod's, not the node's), else the host name. Agents sharing a node share its node name,
// so the results count that node once.
// Slurm's tasks on this node: SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE), a list like "2(x3),1" with one
// entry per node of the allocation in SLURM_NODEID order; when it cannot be read, a SLURM_LOCALID above 0 still
// proves there are several.
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>

namespace dlio {

struct AgentIdentity {
  std::string name;
  std::string node;
  std::string name_source;   // where the name came from, for the log: "--name", "SLURMD_NODENAME", ...
};

// `getenv` returns null for unset variables (std::getenv in production, a map in tests).
AgentIdentity ResolveIdentity(const std::string& flag_name, const std::string& flag_node,
                              const std::function<const char*(const char*)>& getenv, const std::string& hostname);

// Tasks Slurm runs on node `node_id` according to a tasks-per-node list ("2(x3),1"); -1 when it cannot tell.
int SlurmTasksOnNode(const std::string& tasks_per_node, int node_id);

}  // namespace dlio
