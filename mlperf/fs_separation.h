// The file-system separation probe of MLPerf Storage v3.0 (Rules.md 3.4.2 training, 4.4.2 checkpointing: the data
// and the results must live on different file systems, so results writes never share the storage under test),
// as `--mlperf` applies it (docs/mlperf.md "Run behaviour of v3.0").
//
// Contract:
//  - ProbeFileSystem(path): the file system of `path`, or of its nearest existing ancestor when it does not exist
//    yet (a data folder the generation makes): stat(2) st_dev as "major:minor", statfs(2) f_type as a name
//    (base/host_facts.h FsTypeName). `error` is set when not even "/" answers.
//  - ProbeSeparation(data, results, storage_type): both probes and the verdict; data on object storage (s3) is
//    separate by definition. `separate` is false when both paths share a device.
//  - FsSeparationJson(): the document written as fs_separation.json into every run folder of a set.
//  - FsSeparationRule(checkpointing): "Rules.md 3.4.2" or "Rules.md 4.4.2".
// Thread-safety: free functions, no shared state.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace dlio {

struct FsProbe {
  std::string path;      // as asked
  std::string probed;    // the path (or nearest existing ancestor) that was stat'ed
  std::string device;    // "major:minor" of st_dev
  std::string fs_type;   // "ext4", "tmpfs", "nfs", "0x..."
  std::string error;     // non-empty when nothing could be probed
};
FsProbe ProbeFileSystem(const std::string& path);

struct FsSeparation {
  FsProbe data, results;
  bool object_storage = false;  // data on s3: nothing local to share a file system with
  bool separate = false;
};
FsSeparation ProbeSeparation(const std::string& data, const std::string& results, const std::string& storage_type);

std::string FsSeparationRule(bool checkpointing);

nlohmann::json FsSeparationJson(const FsSeparation& s, bool checkpointing);

}  // namespace dlio
