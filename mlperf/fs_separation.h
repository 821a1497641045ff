// The file-system separation probe of MLPerf Storage v3.0 (Rules.md 3.4.2 training, 4.4.2 checkpointing: the data
// and the results must live on different file systems, so results writes never share the storage under test),
// as `--mlperf` applies it (docs/mlperf.md "Run behaviour of v3.0").
//
// Contract:
//  - ProbeFileSystem(path): the file system of `path`, or of its nearest existing ancestor when it does not exist
//    yet (a data folder the generation makes): stat(2) st_dev as "major:minor", statfs(2) f_type as a name
//    (base/host_facts.h FsTypeName). `error` is set when not even "/" answers.
//    Also the mount holding it (base/mount_id.h: mount point, source, mountinfo type, f_fsid) and this host's name.
//  - ProbeSeparation(data, results, storage_type): both probes and the verdict; data on object storage (s3) is
//    separate by definition. `separate` is false when both are one file system (base/mount_id.h SameFileSystem:
//    a network file system by its source, a local one by its device).
//  - SeparationFromSummary(summary, results, storage_type): `submit`, whose agents are on other hosts: every
//    agent's data root as the job's summary.json reports it (dlio_ext.provenance.agents[]: hostname and
//    data_root_mount, from the agent's Hello) against the results folder probed here. `separate` when every agent's
//    is; `data` is the first agent sharing the results' file system (else the first agent), `agents` all of them.
//    An agent that reported no mount (an older agent) is an error probe: not separate, the record says why.
//  - FsSeparationJson(): the document written as fs_separation.json into every run folder of a set.
//  - FsSeparationRule(checkpointing): "Rules.md 3.4.2" or "Rules.md 4.4.2".
//  - ProbeJobSeparation(spec, checkpointing, data_root, results): ProbeSeparation of the job's data folder (its
//    checkpoint folder when checkpointing) below `data_root` and the results folder.
//  - PrintFsRefusal(sep, checkpointing, outcome, err): the one-line refusal naming the rule, both paths, devices and
//    types, then `outcome` ("refused before any job").
// Thread-safety: free functions, no shared state.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "base/mount_id.h"
#include "job/workload_spec.h"
#include "nlohmann/json.hpp"

namespace dlio {

struct FsProbe {
  std::string path;      // as asked
  std::string probed;    // the path (or nearest existing ancestor) that was stat'ed
  std::string device;    // "major:minor" of st_dev
  std::string fs_type;   // "ext4", "tmpfs", "nfs", "0x..."
  std::string error;     // non-empty when nothing could be probed
  MountId mount;         // the mount holding it
  std::string host;      // the host it was probed on
  std::string agent;     // the agent that reported it (SeparationFromSummary)
};
FsProbe ProbeFileSystem(const std::string& path);

struct FsSeparation {
  FsProbe data, results;
  std::vector<FsProbe> agents;  // SeparationFromSummary: every agent's data root
  bool object_storage = false;  // data on s3: nothing local to share a file system with
  bool separate = false;
};
FsSeparation ProbeSeparation(const std::string& data, const std::string& results, const std::string& storage_type);

FsSeparation SeparationFromSummary(const nlohmann::json& summary, const std::string& results,
                                   const std::string& storage_type);

std::string FsSeparationRule(bool checkpointing);

nlohmann::json FsSeparationJson(const FsSeparation& s, bool checkpointing);

FsSeparation ProbeJobSeparation(const WorkloadSpec& spec, bool checkpointing, const std::string& data_root,
                                const std::string& results);

void PrintFsRefusal(const FsSeparation& sep, bool checkpointing, const std::string& outcome, std::ostream& err);

}  // namespace dlio
