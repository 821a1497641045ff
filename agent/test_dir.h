// A temporary folder for the agent's unit tests (test code only): made fresh under /tmp (mkdtemp), opened as a
// confined data root (base/confined_dir.h), removed with everything in it when the object goes.
// Thread-safety: one test's object; Touch may be called from one thread at a time.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "base/confined_dir.h"

namespace dlio {

class TestDir {
 public:
  TestDir() {
    std::string t = "/tmp/dlio_agent_test.XXXXXX";
    path_ = ::mkdtemp(t.data());
    root_ = *ConfinedDir::OpenRoot(path_.string());
  }
  ~TestDir() { std::filesystem::remove_all(path_); }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The folder as the agent opens a data root.
  const ConfinedDir& root() const { return *root_; }
  // Creates file `rel` (and the folders on its way) holding one byte.
  void Touch(const std::string& rel) const {
    std::filesystem::create_directories((path_ / rel).parent_path());
    std::ofstream(path_ / rel) << "x";
  }

 private:
  std::filesystem::path path_;
  std::shared_ptr<const ConfinedDir> root_;
};

}  // namespace dlio
