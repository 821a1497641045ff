#include "job/format_traits.h"

namespace dlio {

const std::vector<FormatTraits>& Formats() {
  // name, streams, reads_objects, ranged_gets, dlio_s3, io_engines, image
  static const std::vector<FormatTraits> formats = {
      {"npz", false, true, false, true, true, false},
      {"hdf5", false, true, true, false, false, false},  // libhdf5 does its own reads
      {"tfrecord", true, true, true, false, true, false},
      {"csv", false, true, false, false, true, false},
      {"npy", false, true, false, true, true, false},
      {"jpeg", false, true, false, false, true, true},
      {"png", false, true, false, false, true, true},
      {"indexed_binary", false, true, true, false, false, false},
      {"mmap_indexed_binary", false, false, false, false, false, false},
      {"synthetic", false, true, false, false, false, false},  // placeholder files, no reads
  };
  return formats;
}

const std::vector<std::string>& FormatNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const FormatTraits& f : Formats()) v.emplace_back(f.name);
    return v;
  }();
  return names;
}

const FormatTraits* FindFormatTraits(const std::string& name) {
  for (const FormatTraits& f : Formats()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

}  // namespace dlio
