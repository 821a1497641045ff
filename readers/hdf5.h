// hdf5: DLIO's HDF5 format (h5py.File(path, 'w', libver='latest')) behind the Format interface, via libhdf5's C API.
//
// File: superblock v3 (libver bounds latest/latest, like h5py libver='latest'), datasets at the root:
//   records_0  uint8, shape (nspf, d1, ..., dk): sample i is records_0[i] (first axis, contiguous per sample);
//              chunked with FormatOptions::hdf5_chunk_dims when given, gzip (deflate) at compression_level when
//              compression == "gzip" (gzip without chunk dims uses one sample per chunk, which HDF5 requires
//              some chunk shape for; h5py would guess one);
//   labels     int64 zeros, shape (nspf,), contiguous.
// Object modification times are not stored (h5py's track_times=False default), so a seed reproduces the bytes.
// Generate() builds the file with the in-memory "core" driver and writes the finished image with our own
// pwrite()s, so every write is accounted exactly (bytes written == file size); peak memory is about twice the file.
//
// Reader (DLIO's HDF5Reader in on_demand mode): every ReadSample() opens the file, opens records_0, H5Dread()s the
// hyperslab of sample i into a per-reader buffer that only grows, and closes everything again. Element type and
// shape come from the file, so DLIO's own files (any record shape) are read as they are.
//
// Accounting: HDF5 does its file I/O inside the library (metadata, chunk index, possibly several syscalls per
// read), which we cannot see. Each H5Dread counts as ONE op of the sample's payload bytes (uncompressed, what the
// caller gets) with the H5Dread latency; open/close metadata reads are not counted. Hence bytes read can differ
// from the bytes the device served (gzip: fewer on disk; metadata: more).
//
// Thread-safety: Debian's libhdf5 (1.10.8) is built thread-safe: a global lock inside the library serialises every
// H5* call, so HDF5 readers on several loader threads do not read in parallel (h5py has the same limit through
// its own lock). Readers keep no shared state of ours. HDF5 allocates internally on open; our buffers do not.
// Errors: the innermost HDF5 error description is included in the status; HDF5's own stderr printing is turned
// off for the calling thread.
#pragma once

#include <memory>

#include "readers/format.h"

namespace dlio {

// Options must have been validated (MakeFormat does it).
std::unique_ptr<Format> NewHdf5Format(const FormatOptions& options);

}  // namespace dlio
