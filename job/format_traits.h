// FormatTraits: the one registry of dataset formats (dataset.format), with what the job's spec, the epoch plan and
// the format library need to know about each without linking the readers.
//
// Every list of format names asks this table: the spec's allowed values (job/workload_spec.cc), the access
// pattern of the epoch plan (plan/epoch_plan.cc), object-storage rules, and the readers' factory
// (readers/format.cc, whose test checks it makes exactly these formats). Adding a format = one row here + one
// factory in readers/format.cc.
// Thread-safety: immutable static data; safe from any thread.
#pragma once

#include <string>
#include <vector>

namespace dlio {

struct FormatTraits {
  const char* name;
  // DLIO's TensorFlow pipeline streams the files, interleaved over the reader threads (EpochPlan's kStream); the
  // others are read by sample index (kIndex).
  bool streams = false;
  // Readable from an s3 bucket (mmap_indexed_binary maps a local file: no).
  bool reads_objects = true;
  // Over s3: ranged GETs per sample (else one whole-object GET per file).
  bool ranged_gets = false;
  // DLIO itself allows the format over s3 (npz and npy only).
  bool dlio_s3 = false;
  // Read through the storage layer's io engines (dlio_ext.io_engine other than posix).
  bool io_engines = false;
  // An image format: uint8 samples of 2 dimensions (height, width).
  bool image = false;
};

// Every format, in the order the spec lists them to users.
const std::vector<FormatTraits>& Formats();
// The names of Formats(), in that order.
const std::vector<std::string>& FormatNames();
// The row of `name`, or null for an unknown format.
const FormatTraits* FindFormatTraits(const std::string& name);

}  // namespace dlio
