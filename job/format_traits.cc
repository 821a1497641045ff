#include "job/format_traits.h"

#include <algorithm>

namespace dlio {
namespace {

// libjpeg's JPEG_MAX_DIMENSION; PNG allows more, but DLIO's images are the same either way.
constexpr int64_t kMaxImageSide = 65500;
// Formats the storage layer could serve but whose readers do not use it yet.
constexpr const char* kNoEnginesYet = " yet (use posix; npz, npy, csv, jpeg, png and tfrecord have it)";

FormatTraits Row(const char* name) {
  FormatTraits f;
  f.name = name;
  return f;
}

FormatTraits Image(const char* name) {
  FormatTraits f = Row(name);
  f.io_engines = true;
  f.image = true;
  f.max_side = kMaxImageSide;
  return f;
}

// Data table: one row per format, in the order users see them.
std::vector<FormatTraits> Rows() {
  std::vector<FormatTraits> v;
  FormatTraits f = Row("npz");
  f.dlio_s3 = f.io_engines = true;
  f.compressions = {"none", "zip"};
  v.push_back(f);
  f = Row("hdf5");
  f.ranged_gets = true;
  f.no_engines = " (libhdf5 does its own reads; use posix)";
  f.no_engines_at_load = true;
  f.compressions = {"none", "gzip", "szip", "lzf"};
  f.chunking = true;
  v.push_back(f);
  f = Row("tfrecord");
  f.streams = f.index_folder = f.ranged_gets = f.io_engines = true;
  v.push_back(f);
  f = Row("csv");
  f.io_engines = true;
  f.compressions = {"none", "gzip"};
  f.dlio_compresses_more = true;
  v.push_back(f);
  f = Row("npy");
  f.dlio_s3 = f.io_engines = true;
  v.push_back(f);
  v.push_back(Image("jpeg"));
  v.push_back(Image("png"));
  f = Row("indexed_binary");
  f.ranged_gets = true;
  f.no_engines = kNoEnginesYet;
  v.push_back(f);
  f = Row("mmap_indexed_binary");
  f.reads_objects = false;
  f.no_engines = kNoEnginesYet;
  f.dlio_differs = "mmap_indexed_binary reads touch every 4 KiB page of each sample here; DLIO's reader only "
                   "slices a memmap view and reads almost nothing, so its bytes read are not comparable";
  v.push_back(f);
  f = Row("parquet");
  f.ranged_gets = f.io_engines = true;
  f.compressions = {"none", "snappy", "zstd", "lz4", "gzip"};
  f.note = "MLPerf Storage v3's flux and dlrm: columns, row groups, byte-range reads of the selected column chunks";
  v.push_back(f);
  f = Row("synthetic");
  f.note = "placeholder files, no reads";
  f.no_engines = " (it reads nothing; use posix)";
  v.push_back(f);
  return v;
}

}  // namespace

bool FormatTraits::Compresses(const std::string& compression) const {
  return compression == "none" || std::find(compressions.begin(), compressions.end(), compression) != compressions.end();
}

const std::vector<FormatTraits>& Formats() {
  static const std::vector<FormatTraits> formats = Rows();
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

const FormatTraits& FormatTraitsOf(const std::string& name) {
  static const FormatTraits none;
  const FormatTraits* f = FindFormatTraits(name);
  return f != nullptr ? *f : none;
}

std::vector<const FormatTraits*> CompressingFormats() {
  std::vector<const FormatTraits*> out;
  for (const FormatTraits& f : Formats()) {
    if (!f.compressions.empty()) out.push_back(&f);
  }
  std::stable_sort(out.begin(), out.end(), [](const FormatTraits* a, const FormatTraits* b) {
    return a->compressions.size() > b->compressions.size();
  });
  return out;
}

}  // namespace dlio
