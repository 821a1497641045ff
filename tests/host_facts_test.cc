// Host facts at a job's start and end (issue 25 item 2, docs/results.md "Host facts") over real processes: a
// coordinator and a dlio-agent started with a secret-looking variable in its environment run a job; the stored
// <agent>_host_facts.json is checked against /proc and /sys read here (sysctl values, the agent's mounts, the drives of
// /sys/block, the hostname and kernel), the secret masked; a tmpfs mounted while the job runs is the one change its
// summary names.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A /proc/sys value as one line (runs of blanks as one space), as sysctl(8) prints it.
std::string SysctlValue(const std::string& key) {
  std::string rel = key;
  for (char& c : rel) c = c == '.' ? '/' : c;
  std::istringstream in(Slurp(fs::path("/proc/sys") / rel));
  std::string w, out;
  while (in >> w) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The mount points of /proc/<pid>/mountinfo (field 5, \040 as a space).
std::multiset<std::string> MountPoints(pid_t pid) {
  std::multiset<std::string> out;
  std::istringstream in(Slurp("/proc/" + std::to_string(pid) + "/mountinfo"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, mp;
    if (!(f >> id >> parent >> dev >> root >> mp)) continue;
    for (size_t i; (i = mp.find("\\040")) != std::string::npos;) mp.replace(i, 4, " ");
    out.insert(mp);
  }
  return out;
}

TEST(HostFacts, StoredAtStartAndEndAgreeWithProcAndSysAndMaskTheAgentsSecrets) {
  TempDir dir;
  Fleet fleet(dir, 1, 1, {},
              {"env", "DLIO_TEST_SECRET_TOKEN=hunter2-never-stored", "AWS_ACCESS_KEY_ID=AKIAHOSTFACTSTEST",
               "DLIO_TEST_PLAIN=visible"});
  // 4 epochs of 20 steps of 0.1 s: the first epoch's files appear ~2 s before the next epochs end.
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 20, 1, 4096, 1, 0.1, 4, true));
  Process submit({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--coordinator", fleet.address(),
                  "--agents", "1", "--output", dir.str() + "/out", "--wait-for-agents", "30"},
                 dir.str() + "/submit.log");
  // Once the first epoch's results are written, a tmpfs mounted on the host is a change between start and end (as
  // root, where mount(2) is allowed; otherwise the run just has no change).
  const fs::path mnt = dir.path() / "mounted-during-the-run";
  fs::create_directories(mnt);
  const bool mounted = ::geteuid() == 0 && Eventually(
                                               [&] {
                                                 std::error_code ec;
                                                 for (auto it = fs::recursive_directory_iterator(
                                                          dir.path() / "coord-results", ec);
                                                      !ec && it != fs::recursive_directory_iterator();
                                                      it.increment(ec)) {
                                                   if (it->path().filename() == "summary.json") return true;
                                                 }
                                                 return false;
                                               },
                                               std::chrono::seconds(60)) &&
                       ::mount("none", mnt.c_str(), "tmpfs", 0, "size=1m") == 0;
  const int rc = submit.Wait(std::chrono::seconds(240));
  if (mounted) ::umount(mnt.c_str());
  ASSERT_TRUE(JobRan(rc)) << rc << "\n" << submit.Log() << fleet.Logs();

  const std::string text = ReadFile(dir.str() + "/out/agent-0_host_facts.json");
  ASSERT_FALSE(text.empty()) << submit.Log();
  EXPECT_EQ(text.find("hunter2"), std::string::npos) << "the secret was stored";
  EXPECT_EQ(text.find("AKIAHOSTFACTSTEST"), std::string::npos) << "the AWS key id was stored";
  const json facts = json::parse(text);
  EXPECT_EQ(facts["agent"], "agent-0");
  for (const char* when : {"start", "end"}) {
    const json& f = facts[when];
    SCOPED_TRACE(when);
    // The environment of the agent process, secrets masked.
    EXPECT_EQ(f["environment"]["DLIO_TEST_SECRET_TOKEN"], "***");
    EXPECT_EQ(f["environment"]["AWS_ACCESS_KEY_ID"], "***");
    EXPECT_EQ(f["environment"]["DLIO_TEST_PLAIN"], "visible");
    // The host.
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    EXPECT_EQ(f["hostname"], host);
    struct utsname u {};
    ::uname(&u);
    EXPECT_NE(f["kernel"].get<std::string>().find(u.release), std::string::npos) << f["kernel"];
    // Every sysctl value as /proc/sys has it, and the keys that matter most there whenever this kernel has them.
    ASSERT_TRUE(f["sysctl"].is_object());
    for (auto it = f["sysctl"].begin(); it != f["sysctl"].end(); ++it) {
      EXPECT_EQ(it.value(), SysctlValue(it.key())) << it.key();
    }
    for (const char* k : {"vm.dirty_ratio", "vm.dirty_background_ratio", "vm.swappiness", "vm.vfs_cache_pressure",
                          "net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
                          "fs.file-max"}) {
      if (!SysctlValue(k).empty()) {
        EXPECT_TRUE(f["sysctl"].contains(k)) << k;
      }
    }
    // The drives of /sys/block but loop, ram and zram devices, with their sizes.
    std::map<std::string, uint64_t> sys_drives;
    for (const auto& e : fs::directory_iterator("/sys/block")) {
      const std::string name = e.path().filename().string();
      if (name.rfind("loop", 0) == 0 || name.rfind("ram", 0) == 0 || name.rfind("zram", 0) == 0) continue;
      sys_drives[name] = std::stoull("0" + Slurp(e.path() / "size")) * 512;
    }
    std::map<std::string, uint64_t> stored_drives;
    for (const json& d : f["drives"]) stored_drives[d["name"]] = d["size_bytes"].get<uint64_t>();
    EXPECT_EQ(stored_drives, sys_drives);
  }
  // The mounts: the agent's own mount table, the data root's mount named.
  std::multiset<std::string> stored;
  for (const json& m : facts["start"]["mounts"]) stored.insert(m["mount_point"].get<std::string>());
  EXPECT_EQ(stored, MountPoints(fleet.agent(0).pid()));
  const std::string root = fs::canonical(dir.path() / "root").string();
  const std::string mount = facts["start"]["data_root"]["mount_point"];
  ASSERT_FALSE(mount.empty());
  EXPECT_TRUE(mount == "/" || root == mount || root.rfind(mount + "/", 0) == 0) << mount << " " << root;
  for (const std::string& m : stored) {  // no longer mount holds the data root
    if (m.size() > mount.size() && (root == m || root.rfind(m + "/", 0) == 0)) {
      ADD_FAILURE() << m << " holds " << root;
    }
  }

  // What changed between start and end, in one line, in the file and the summary.
  const json summary = LoadJson(dir.str() + "/out/summary.json");
  if (!mounted) {
    EXPECT_EQ(facts["changed"], "") << facts["changed"];
    EXPECT_FALSE(summary["dlio_ext"].contains("host_facts_changed")) << summary["dlio_ext"].dump();
    return;
  }
  const std::string change = "mount " + mnt.string() + " added (\"tmpfs\", \"none\")";
  EXPECT_NE(facts["changed"].get<std::string>().find(change), std::string::npos) << facts["changed"];
  ASSERT_TRUE(summary["dlio_ext"].contains("host_facts_changed")) << summary["dlio_ext"].dump();
  EXPECT_NE(summary["dlio_ext"]["host_facts_changed"]["agent-0"].get<std::string>().find(change), std::string::npos)
      << summary["dlio_ext"]["host_facts_changed"];
  EXPECT_EQ(MountPoints(fleet.agent(0).pid()).count(mnt.string()), 0u);  // unmounted again
}

}  // namespace
}  // namespace dlio::testing
