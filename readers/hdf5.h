// hdf5: DLIO's HDF5 format (h5py.File(path, 'w', libver='latest')) behind the Format interface, via libhdf5's C API.
//
// File: superblock v3 (libver bounds latest/latest, like h5py libver='latest'), datasets at the root:
//   records_0..records_{k-1}  (k = hdf5_num_dset_per_record) element type of the options (h5py's type for the numpy
//              dtype; float16 built as h5py builds it), shape (nspf, *Hdf5RecordDims(sample_dims, k)): DLIO splits
//              the first sample axis over the k datasets and drops a leading axis of 1. Sample i is records_j[i]
//              of every j (first axis). Maximum shape (nspf, *hdf5_max_shape) when given (DLIO's hdf5.max_shape).
//              Chunked with hdf5_chunk_dims when given; otherwise, when a filter or a max shape needs chunks, with
//              h5py's guess_chunk() (what h5py does for DLIO's create_dataset call); contiguous otherwise.
//              Filters as h5py sets them: gzip = deflate at compression_level; szip = H5Pset_szip(NN, 8 pixels per
//              block), h5py's default options (szip is our extension: DLIO's Compression enum has no szip);
//              lzf = filter 32000, optional, through Debian's hdf5-plugin-lzf (see LzfAvailable() in hdf5.cc for
//              the liblzf detail). DLIO writes the same random records into every records_j; we draw each anew.
//   labels     int64 zeros, shape (nspf,), contiguous.
// Object modification times are not stored (h5py's track_times=False default), so a seed reproduces the bytes.
// Generate() builds the file with the in-memory "core" driver and writes the finished image with our own
// pwrite()s, so every write is accounted exactly (bytes written == file size); peak memory is about twice the file.
//
// Engines (FormatOptions::hdf5_replay, dlio_ext.hdf5_engine): replay (the default, readers/hdf5_replay.h) issues
// for each sample the reads the libhdf5 engine below would, without calling libhdf5 once a file's plan is proven;
// libhdf5 is the reader described here, and what replay falls back to.
// Reader (DLIO's HDF5Reader in on_demand mode): every ReadSample() opens the file, and for each records_j
// (j < hdf5_num_dset_per_record of the options, as DLIO's reader takes k from its config) H5Dread()s the hyperslab
// of sample i into a per-reader buffer that only grows (the k samples back to back), then closes everything again.
// Element type and shape come from the file, and the memory type is the file's own type (no conversion), so DLIO's
// own files (any record shape) are read as they are.
//
// Accounting: libhdf5 reads the file through our virtual file driver (storage/hdf5_vfd.h) over a StorageReader, so
// every read it makes (superblock, object headers, B-trees, the sieve-buffered or chunked data) is one op of the
// bytes the read syscall returned, and every H5Fopen counts one file: bytes read are what the process read, metadata
// included, and equal strace's sum of its reads (tests/trace_test.cc). The driver announces sec2's feature flags,
// so libhdf5 reads as it does for h5py: a contiguous sample smaller than the 64 KiB sieve buffer is read with the
// bytes around it (up to 64 KiB of the dataset), gzip chunks compressed. Over s3 the same driver turns the reads
// into ranged GETs of exactly what libhdf5 asks, the object's first 64 KiB kept while the reader stays on it: bytes
// read are the bytes the GETs returned.
// Thread-safety: Debian's libhdf5 (1.10.8) is built thread-safe: a global lock inside the library serialises every
// H5* call, so libhdf5 readers on several loader threads do not read in parallel (replayed samples do) (h5py has the same limit through
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
