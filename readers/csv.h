// csv: DLIO's CSV format (pandas DataFrame.to_csv(index=False, header=False)) behind the Format interface.
//
// File: samples_per_file IDENTICAL rows (DLIO writes `[record] * num_samples`), each the flattened record of
// prod(sample_dims) values of the element type written as text, comma-separated, LF line ends, no header row and no
// index column. Integer types are written as decimal integers; float types with the shortest text that reads back
// to the same value (std::to_chars; float16 through float32). Rows differ between files.
// DLIO's `compression` for csv (gz, bz2, zip, xz) is not implemented: the loader refuses it.
//
// Reader (DLIO's CSVReader in on_demand mode: pandas.read_csv of the whole file per sample): every ReadSample()
// opens the file, reads ALL of it with pread()s of up to 8 MiB into a per-reader buffer that only grows, finds row
// `sample` and parses its values into the element type of the options (pandas parses every row into int64; the I/O
// is the same, the CPU cost lower). Returns values x element size; last_sample() gives those values as bytes of the
// element type, so a uint8 reader of DLIO's files sees the MANIFEST's sums and heads.
//
// Thread-safety: a reader belongs to one thread; the Format object itself is immutable and shareable.
#pragma once

#include <memory>

#include "readers/format.h"

namespace dlio {

// Options must have been validated (MakeFormat does it).
std::unique_ptr<Format> NewCsvFormat(const FormatOptions& options);

}  // namespace dlio
