// Host facts in the results (results/host_facts_json.h): the JSON form, the wire merge and the one-line change.
#include "results/host_facts_json.h"

#include "gtest/gtest.h"
#include "results/results.h"

namespace dlio {
namespace {

using json = nlohmann::json;

RunHostFacts Facts() {
  RunHostFacts f;
  f.hostname = "node-1";
  f.provenance.kernel = "Linux 6.1.0-18-amd64 #1 SMP x86_64";
  f.provenance.data_root_fs = "xfs";
  f.os_release = {{"PRETTY_NAME", "Debian GNU/Linux 12 (bookworm)"}};
  f.sysctl = {{"vm.swappiness", "60"}, {"vm.dirty_ratio", "20"}};
  f.environment = {{"PATH", "/usr/bin"}, {"AWS_SECRET_ACCESS_KEY", "***"}};
  f.drives = {{"nvme0n1", "disk", "", "Samsung SSD", 1000204886016, 0, "nvme"}};
  f.mounts = {{"/", "ext4", "/dev/vda1"}, {"/mnt/data", "xfs", "/dev/nvme0n1"}};
  f.data_root = "/mnt/data/root";
  f.data_root_mount = "/mnt/data";
  return f;
}

TEST(HostFactsJson, WritesEveryPart) {
  const json j = RunHostFactsJson(Facts());
  EXPECT_EQ(j["hostname"], "node-1");
  EXPECT_EQ(j["sysctl"]["vm.swappiness"], "60");
  EXPECT_EQ(j["environment"]["AWS_SECRET_ACCESS_KEY"], "***");
  EXPECT_EQ(j["drives"][0]["rotational"], false);
  EXPECT_EQ(j["drives"][0]["transport"], "nvme");
  EXPECT_EQ(j["mounts"][1]["mount_point"], "/mnt/data");
  EXPECT_EQ(j["data_root"]["mount_point"], "/mnt/data");
  EXPECT_EQ(j["data_root"]["fs_type"], "xfs");
  EXPECT_EQ(j["os_release"]["PRETTY_NAME"], "Debian GNU/Linux 12 (bookworm)");
}

TEST(HostFactsJson, SaysWhatChangedInOneLine) {
  const json a = RunHostFactsJson(Facts());
  EXPECT_EQ(HostFactsChanges(a, a), "");
  RunHostFacts g = Facts();
  g.sysctl["vm.swappiness"] = "10";
  g.sysctl.erase("vm.dirty_ratio");
  g.environment["AWS_SECRET_ACCESS_KEY"] = "***";  // masked both times: no change seen
  g.environment["NEW_VAR"] = "x";
  g.mounts.push_back({"/mnt/nfs", "nfs4", "server:/export"});
  const std::string line = HostFactsChanges(a, RunHostFactsJson(g));
  EXPECT_EQ(line,
            "sysctl vm.dirty_ratio removed; sysctl vm.swappiness 60 -> 10; environment NEW_VAR added; mount /mnt/nfs "
            "added (\"nfs4\", \"server:/export\")");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  for (int i = 0; i < 20; ++i) g.sysctl["k" + std::to_string(i)] = "1";
  EXPECT_NE(HostFactsChanges(a, RunHostFactsJson(g)).find("; and 16 more"), std::string::npos);
}

TEST(HostFactsJson, MergesTheFirstStartAndTheLatestEnd) {
  json merged;
  MergeHostFactsWire(R"({"start": {"hostname": "a"}})", &merged);
  MergeHostFactsWire("", &merged);
  MergeHostFactsWire("{not json", &merged);
  json file = HostFactsFileJson("agent-0", merged);
  EXPECT_EQ(file["start"]["hostname"], "a");
  EXPECT_EQ(file["end"]["hostname"], "a");  // no end came: the host did not change
  EXPECT_EQ(file["changed"], "");
  MergeHostFactsWire(R"({"start": {"hostname": "x"}, "end": {"hostname": "b", "kernel": "k2"}})", &merged);
  MergeHostFactsWire(R"({"end": {"hostname": "c", "kernel": "k3"}})", &merged);
  file = HostFactsFileJson("agent-0", merged);
  EXPECT_EQ(file["agent"], "agent-0");
  EXPECT_EQ(file["start"]["hostname"], "a");
  EXPECT_EQ(file["end"]["hostname"], "c");
  EXPECT_EQ(file["changed"], "kernel  -> k3");
  EXPECT_EQ(HostFactsFileName("we/ird"), "we_ird_host_facts.json");
}

}  // namespace
}  // namespace dlio
