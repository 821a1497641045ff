// ckpt_rss_bench: writes and reads back one checkpoint of a given size through the agent's Checkpointer and prints
// throughput and peak RSS, to show that agent memory stays bounded by the reusable buffer (64 MiB) whatever the
// checkpoint size. Not part of CTest.
//   build/bench/ckpt_rss_bench DIR [GIB=20] [FILES=4] [fsync=1]
// Writes FILES files of GIB/FILES GiB into DIR/global_epoch1_step0, reads them back, removes them.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "agent/checkpointer.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [GIB=20] [FILES=4] [FSYNC=1]\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const double gib = argc > 2 ? std::atof(argv[2]) : 20.0;
  const int nfiles = argc > 3 ? std::atoi(argv[3]) : 4;
  const bool fsync = argc > 4 ? std::atoi(argv[4]) != 0 : true;
  if (gib <= 0 || nfiles <= 0) {
    std::fprintf(stderr, "GIB and FILES must be positive\n");
    return 2;
  }
  const auto per_file = static_cast<int64_t>(gib * static_cast<double>(int64_t{1} << 30) / nfiles);
  std::vector<dlio::CheckpointFile> files;
  for (int i = 0; i < nfiles; ++i) files.push_back({"file_" + std::to_string(i) + ".pt", per_file});
  dlio::Checkpointer c(*dlio::ConfinedDir::OpenRoot(dir.string()), fsync, 1);
  auto saved = c.Save("global_epoch1_step0", files);
  if (!saved.ok()) {
    std::fprintf(stderr, "%s\n", std::string(saved.status().message()).c_str());
    return 1;
  }
  auto loaded = c.Load("global_epoch1_step0", files);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
    return 1;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir / "global_epoch1_step0", ec);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double g = static_cast<double>(saved->bytes) / static_cast<double>(int64_t{1} << 30);
  std::printf("checkpoint %.2f GiB in %lld files, fsync %s: save %.2f s (%.2f GiB/s), load %.2f s (%.2f GiB/s), "
              "buffer %.1f MiB, peak RSS %.1f MiB\n",
              g, static_cast<long long>(saved->files), fsync ? "on" : "off", saved->seconds, g / saved->seconds,
              loaded->seconds, g / loaded->seconds, static_cast<double>(c.buffer_size()) / (1 << 20),
              static_cast<double>(ru.ru_maxrss) / 1024.0);
  return 0;
}
