// synthetic: DLIO's `synthetic` format behind the Format interface: no data I/O when training.
//
// Generate() writes what DLIO's SyntheticGenerator writes: a tiny placeholder file per data file holding the file's
// index as decimal text (DLIO: `f.write(f"{i}")`), with the usual name `<prefix>_<i>_of_<N>.synthetic`, so file
// discovery and the files-present check behave as for every other format. The index is read from that name (the
// digits before `_of_`); a name that does not follow the pattern gets "0".
// Reader (DLIO's SyntheticReader hands out a fixed in-memory tensor): ReadSample() touches no file; it counts the
// sample and returns 0 bytes, so a run measures the pipeline without storage (bytes read stay 0).
//
// Thread-safety: a reader belongs to one thread; the Format object itself is immutable and shareable.
#pragma once

#include <memory>

#include "readers/format.h"

namespace dlio {

std::unique_ptr<Format> NewSyntheticFormat(const FormatOptions& options);

}  // namespace dlio
