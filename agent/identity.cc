#include "agent/identity.h"

#include <cstdlib>
#include <string_view>

namespace dlio {

namespace {

bool ParseInt(std::string_view s, int* out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

std::string Env(const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* v = getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

}  // namespace

int SlurmTasksOnNode(const std::string& list, int node_id) {
  if (list.empty() || node_id < 0) return -1;
  int index = 0;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = list.find(',', pos);
    const std::string_view entry(list.data() + pos, (comma == std::string::npos ? list.size() : comma) - pos);
    // "N" or "N(xR)": N tasks on each of R nodes.
    int tasks = 0, repeat = 1;
    const size_t paren = entry.find("(x");
    if (paren == std::string_view::npos) {
      if (!ParseInt(entry, &tasks)) return -1;
    } else {
      if (entry.back() != ')' || !ParseInt(entry.substr(0, paren), &tasks) ||
          !ParseInt(entry.substr(paren + 2, entry.size() - paren - 3), &repeat)) {
        return -1;
      }
    }
    if (node_id < index + repeat) return tasks;
    index += repeat;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return -1;
}

AgentIdentity ResolveIdentity(const std::string& flag_name, const std::string& flag_node,
                              const std::function<const char*(const char*)>& getenv, const std::string& hostname) {
  AgentIdentity id;
  const std::string slurm_node = Env(getenv, "SLURMD_NODENAME");
  id.node = !flag_node.empty() ? flag_node : !slurm_node.empty() ? slurm_node : Env(getenv, "NODE_NAME");
  if (id.node.empty()) id.node = hostname;

  if (!flag_name.empty()) {
    id.name = flag_name;
    id.name_source = "--name";
  } else if (!slurm_node.empty()) {
    id.name = slurm_node;
    id.name_source = "SLURMD_NODENAME";
    const std::string local = Env(getenv, "SLURM_LOCALID");
    int local_id = -1;
    if (ParseInt(local, &local_id)) {
      std::string list = Env(getenv, "SLURM_STEP_TASKS_PER_NODE");
      if (list.empty()) list = Env(getenv, "SLURM_TASKS_PER_NODE");
      int node_id = -1;
      ParseInt(Env(getenv, "SLURM_NODEID"), &node_id);
      const int tasks = SlurmTasksOnNode(list, node_id);
      if (tasks > 1 || (tasks < 0 && local_id > 0)) {
        id.name += "-" + local;
        id.name_source = "SLURMD_NODENAME-SLURM_LOCALID";
      }
    }
  } else if (const std::string pod = Env(getenv, "POD_NAME"); !pod.empty()) {
    id.name = pod;
    id.name_source = "POD_NAME";
  } else {
    id.name = hostname;
    id.name_source = "host name";
  }
  return id;
}

}  // namespace dlio
