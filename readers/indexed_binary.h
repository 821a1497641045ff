// indexed_binary, mmap_indexed_binary: DLIO's Megatron/DLRM-style raw format behind the Format interface.
//
// Files (DLIO's IndexedBinaryGenerator; both formats write the same layout, with the format name as extension):
//   <name>          the samples_per_file samples of prod(sample_dims) x element size raw bytes, back to back;
//   <name>.off.idx  one little-endian uint64 per sample: its byte offset in <name>;
//   <name>.sz.idx   one little-endian uint64 per sample: its size in bytes.
// The index files sit beside the data file (CompanionPaths), so a listing of train/ must keep only <name> (the
// loader's extension filter does). Generate() writes all three through our accounted FileWriter, one AddFile each.
//
// Readers load BOTH index files of a file once (two whole-file reads, accounted, cached per reader for the last
// file, as DLIO's readers cache them per open file) and then, per sample:
//   indexed_binary       one pread() of exactly the sample's size at its offset (DLIO: seek + readinto). In
//                        on_demand mode DLIO reopens the data file per sample; so do we (open + pread + close).
//   mmap_indexed_binary  mmap() of the data file (read-only, kept while the reader stays on that file), then a read
//                        of one byte per 4 KiB page of the sample, so its pages are really faulted in. Counted as one
//                        op of the sample's bytes whose latency is the time to touch them. DIFFERS FROM DLIO: its
//                        reader slices a numpy memmap view and never touches the bytes, so almost no I/O happens
//                        there; a benchmark that reads nothing measures nothing, so we touch the pages.
// Returns the sample's size from the index. A sample past the index, or an index entry past the data file, is an
// error naming the file.
//
// Thread-safety: a reader belongs to one thread; the Format object itself is immutable and shareable.
#pragma once

#include <memory>

#include "readers/format.h"

namespace dlio {

// Options must have been validated (MakeFormat does it).
std::unique_ptr<Format> NewIndexedBinaryFormat(const FormatOptions& options);
std::unique_ptr<Format> NewMmapIndexedBinaryFormat(const FormatOptions& options);

}  // namespace dlio
