// Test harness for process-level tests: real dlio-coordinator and dlio-agent processes on loopback.
//
// Binaries come from $DLIO_BIN_DIR (set by CMake for every test). Every process started here is killed when its
// Process object goes out of scope, so a failing test never leaves processes behind.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dlio::testing {

std::string BinDir();
std::string Bin(const std::string& name);
std::string SourceDir();
std::string TestDataDir();

// A fresh empty directory under /tmp, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;       // -1 when killed by the timeout
  std::string out, err;
};

// Runs argv to completion (killed after `timeout`), capturing stdout and stderr.
CommandResult RunCommand(const std::vector<std::string>& argv, std::chrono::seconds timeout = std::chrono::seconds(120),
                  const std::string& cwd = "");

// A background process with stdout+stderr going to a log file.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::string& log_path, const std::string& cwd = "");
  ~Process();
  pid_t pid() const { return pid_; }
  // Waits for exit up to `timeout`; returns the exit code, or -1 on timeout (the process is left running).
  int Wait(std::chrono::milliseconds timeout);
  bool Running();
  void Signal(int sig);
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string log_;
};

// A TCP port that was free a moment ago on 127.0.0.1.
int FreePort();
// HTTP GET http://127.0.0.1:port/path; empty on failure.
std::string HttpGet(int port, const std::string& path);
// Reads a whole file.
std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& content);
// A DLIO workload YAML for tests (data_folder "data", pytorch loader, read_threads 2, prefetch 2).
std::string Workload(const std::string& format, int files, int samples_per_file, int record_bytes, int batch,
                     double compute, int epochs, bool generate, const std::string& extra = "");
// Sum of the sizes of the files with extension `ext` under `dir` (recursively).
uint64_t DataBytes(const std::filesystem::path& dir, const std::string& ext);
nlohmann::json LoadJson(const std::string& path);
// Polls `pred` every 20 ms until true or timeout.
template <typename F>
bool Eventually(F pred, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    struct timespec ts {0, 20'000'000};
    nanosleep(&ts, nullptr);
  }
  return pred();
}

}  // namespace dlio::testing
