// FormatTraits: the one registry of dataset formats (dataset.format): one row per format with its rules, what the
// job's spec, the epoch plan, the pre-run refusals and the format library need to know about each without linking
// the readers.
//
// Every rule that depends on the format asks this table instead of comparing names: the spec's allowed values and
// its cross-key checks (job/workload_spec.cc, job/cross_checks.cc: compressions, image shapes and side, the io
// engines, chunking, the warnings where DLIO differs), the shape geometry (job/shape.cc), the access pattern of the
// epoch plan (plan/epoch_plan.cc), the per-file shape checks of the preflight (plan/preflight.cc), object-storage
// rules, and the readers' options and folders (readers/format.cc, whose test checks its factory makes exactly these
// formats). A new format = one row here, one factory line in readers/format.cc, one pair of files in readers/,
// plus its test.
// Thread-safety: immutable static data; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlio {

struct FormatTraits {
  const char* name = "";
  // DLIO's TensorFlow pipeline streams the files, interleaved over the reader threads (EpochPlan's kStream); the
  // others are read by sample index (kIndex).
  bool streams = false;
  // DLIO's generator writes a DALI index file per data file under <data_folder>/index/<split> (tfrecord).
  bool index_folder = false;
  // Readable from an s3 bucket (mmap_indexed_binary maps a local file: no).
  bool reads_objects = true;
  // Over s3: ranged GETs per sample (else one whole-object GET per file).
  bool ranged_gets = false;
  // DLIO itself allows the format over s3 (npz and npy only).
  bool dlio_s3 = false;
  // Read through the storage layer's io engines (dlio_ext.io_engine other than posix).
  bool io_engines = false;
  // Without io_engines: why, as the refusal "dlio_ext.io_engine: ENGINE is not available for NAME<this>" ends.
  const char* no_engines = "";
  // Without io_engines: the job is refused when it is loaded (the format does its own reads); otherwise the format
  // library refuses the engine when a phase makes the format.
  bool no_engines_at_load = false;
  // An image format: uint8 samples of 2 dimensions (height, width), at most max_side pixels a side.
  bool image = false;
  int64_t max_side = 0;
  // dataset.compression values it writes ("none" first); empty = none only (DLIO ignores compression there).
  std::vector<std::string> compressions;
  // DLIO compresses these files in more ways than `compressions` (csv: bz2, zip, xz): any other value is then a
  // DLIO compression "not supported yet" rather than one the format does not have.
  bool dlio_compresses_more = false;
  // Files of chunked datasets shaped by dataset.hdf5.* (num_dset_per_record, max_shape, chunk_dims) and by
  // enable_chunking with chunk_size (hdf5).
  bool chunking = false;
  // The warning of every job with this format, where our reads differ from DLIO's ("" = none); it follows
  // "dataset.format: ".
  const char* dlio_differs = "";
  // What the docs add to the name in the list of formats (dataset.format's note in docs/workload-keys.md).
  const char* note = "";

  // The sample shape decides whether the format can write a file (image sides, hdf5 datasets and chunks), so the
  // shape of every file is checked (CheckSampleShape in job/workload_spec.h).
  bool shape_rules() const { return image || chunking; }
  // `compression` is one this format writes ("none" always is).
  bool Compresses(const std::string& compression) const;
};

// Every format, in the order the spec lists them to users.
const std::vector<FormatTraits>& Formats();
// The names of Formats(), in that order.
const std::vector<std::string>& FormatNames();
// The row of `name`, or null for an unknown format.
const FormatTraits* FindFormatTraits(const std::string& name);
// The row of `name`; an unknown name gets a row without rules (the defaults above, name "").
const FormatTraits& FormatTraitsOf(const std::string& name);
// The formats with compressions, the most choices first (registry order among equals): the order the loader's
// messages list them in ("hdf5: none, gzip, szip, lzf; npz: none, zip; csv: none, gzip").
std::vector<const FormatTraits*> CompressingFormats();

}  // namespace dlio
