// DataFileNames: the names of one split's data files by file id (the epoch plan's SampleRef::file, 0 .. size()-1),
// as the loader and the readers ask for them (issue 27 item 3). Two kinds:
// - held: a listing's names, one string per file (DLIO's discovery, agent/dataset_files.h's ListDataFiles);
// - derived: DLIO's naming convention (dataset.skip_listing, DeriveDataFiles), kept as a pattern: the location, the
//   split, file_prefix, the count, the subfolder layout and the extension. Its memory is a few short strings
//   whatever the count (1,000,000 names cost what 10 do); a name is computed when it is asked for.
// Name(i, buf) writes file i's full path (folder) or object key (bucket) into *buf, reusing its capacity (no
// allocation once the buffer has grown to the longest name), and returns it; a held name is returned by reference
// and *buf is left alone. Derived names are exactly readers/format.h's DataFileRelPath under the location: the folder
// path joined with '/', or the key prefix joined as storage/s3/client.h's S3Join does.
// Thread-safety: immutable once built (push_back only while building a held list); any number of threads may call
// Name() at once, each with its own buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace dlio {

class DataFileNames {
 public:
  DataFileNames() = default;
  // A held list (implicit: a vector of names is one).
  DataFileNames(std::vector<std::string> names) : held_(std::move(names)) {}  // NOLINT(google-explicit-constructor)
  DataFileNames(std::initializer_list<std::string> names) : held_(names) {}
  // Derived: `<base>/<split>/[<subfolder>/]<prefix>_<i>_of_<count>.<ext>`. `object_keys`: `base` is a key prefix
  // (trailing '/' dropped; empty: the keys start with the split), else a folder's path.
  static DataFileNames Derived(const std::string& base, bool object_keys, const std::string& split,
                               const std::string& prefix, int64_t count, int64_t subfolders, const std::string& ext);

  size_t size() const { return derived_ ? static_cast<size_t>(count_) : held_.size(); }
  bool empty() const { return size() == 0; }
  bool derived() const { return derived_; }
  // File `i`'s name (0 <= i < size()); see above.
  const std::string& Name(int64_t i, std::string* buf) const;
  // Copies of the names, for tests and small sets; O(size()) memory.
  std::string operator[](size_t i) const;
  std::vector<std::string> All() const;
  // Appends a name to a held list (building one name by name).
  void push_back(std::string name) { held_.push_back(std::move(name)); }
  const std::string& back() const { return held_.back(); }
  // Heap bytes the names hold (the held strings and the vector; the pattern's few strings): what the memory
  // measurement of DataFileNames.DerivedNamesHoldNothingPerFile compares.
  size_t HeapBytes() const;

 private:
  std::vector<std::string> held_;
  bool derived_ = false;
  int64_t count_ = 0;
  int64_t subfolders_ = 0;   // > 1: the subfolder `i % subfolders_`, padded to sub_digits_
  size_t digits_ = 1;        // the index padded to the digits of count_
  size_t sub_digits_ = 1;
  std::string head_;         // "<base>/<split>/"
  std::string stem_;         // "<prefix>_"
  std::string tail_;         // "_of_<count>.<ext>"
};

}  // namespace dlio
