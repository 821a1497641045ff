#include "agent/identity.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace dlio {
namespace {

struct Env {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> fn() const {
    return [this](const char* k) -> const char* {
      auto it = vars.find(k);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(Identity, FlagsWinOverTheEnvironment) {
  Env env{{{"SLURMD_NODENAME", "n1"}, {"POD_NAME", "pod"}}};
  const AgentIdentity id = ResolveIdentity("mine", "node-x", env.fn(), "host");
  EXPECT_EQ(id.name, "mine");
  EXPECT_EQ(id.node, "node-x");
}

TEST(Identity, SlurmNodeNameWithOneTaskPerNodeHasNoSuffix) {
  Env env{{{"SLURMD_NODENAME", "n3"}, {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "2"},
           {"SLURM_STEP_TASKS_PER_NODE", "1(x4)"}}};
  const AgentIdentity id = ResolveIdentity("", "", env.fn(), "host");
  EXPECT_EQ(id.name, "n3");
  EXPECT_EQ(id.node, "n3");
}

TEST(Identity, SeveralSlurmTasksOnANodeGetTheLocalIdAppended) {
  Env env{{{"SLURMD_NODENAME", "n3"}, {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "1"},
           {"SLURM_STEP_TASKS_PER_NODE", "1,2(x3)"}}};
  const AgentIdentity id = ResolveIdentity("", "", env.fn(), "host");
  EXPECT_EQ(id.name, "n3-0");
  EXPECT_EQ(id.node, "n3") << "agents on one node share its node name";
}

TEST(Identity, UnreadableTaskListFallsBackToTheLocalId) {
  Env env{{{"SLURMD_NODENAME", "n3"}, {"SLURM_LOCALID", "1"}}};
  EXPECT_EQ(ResolveIdentity("", "", env.fn(), "host").name, "n3-1");
  Env env0{{{"SLURMD_NODENAME", "n3"}, {"SLURM_LOCALID", "0"}}};
  EXPECT_EQ(ResolveIdentity("", "", env0.fn(), "host").name, "n3");
}

TEST(Identity, PodNameThenHostName) {
  Env k8s{{{"POD_NAME", "dlio-agent-7"}, {"NODE_NAME", "worker-2"}}};
  AgentIdentity id = ResolveIdentity("", "", k8s.fn(), "dlio-agent-7");
  EXPECT_EQ(id.name, "dlio-agent-7");
  EXPECT_EQ(id.node, "worker-2");
  Env none;
  id = ResolveIdentity("", "", none.fn(), "box");
  EXPECT_EQ(id.name, "box");
  EXPECT_EQ(id.node, "box");
}

TEST(Identity, SlurmTaskListParsing) {
  EXPECT_EQ(SlurmTasksOnNode("2(x3),1", 0), 2);
  EXPECT_EQ(SlurmTasksOnNode("2(x3),1", 2), 2);
  EXPECT_EQ(SlurmTasksOnNode("2(x3),1", 3), 1);
  EXPECT_EQ(SlurmTasksOnNode("2(x3),1", 4), -1);
  EXPECT_EQ(SlurmTasksOnNode("garbage", 0), -1);
  EXPECT_EQ(SlurmTasksOnNode("", 0), -1);
}

}  // namespace
}  // namespace dlio
