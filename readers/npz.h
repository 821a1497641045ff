// npz: DLIO's NPZ format (numpy.savez) behind the Format interface.
//
// File (as np.savez(path, x=records, y=labels) writes it): a zip archive with two STORED members,
//   x.npy  element type of the options (uint8 by default), shape (d1, ..., dk, nspf): the samples are on the LAST
//          axis, so sample i is x[..., i] and its elements sit nspf items apart in the file;
//   y.npy  int64 zeros, shape (nspf,).
// With compression "zip" both members are DEFLATED at zlib's default level, as numpy.savez_compressed writes them.
// DLIO means `compression: zip` to select savez_compressed, but compares the YAML string with its enum, so its npz
// files are always stored; the loader warns about that difference.
// Each member is an NPY v1.0 file whose header is padded as numpy pads it (spaces for the shape to grow, then a
// total header length that is a multiple of 64), so a 64x64x2 array gets the same 128-byte header as DLIO's files.
// Generate() builds the archive with libzip (fixed mtime so a seed reproduces the bytes) into a per-thread buffer
// reused from file to file; for integer element types x.npy's random bytes are made on demand inside libzip's copy
// loop (a custom zip source), so the member is never materialised on its own (float types are filled in memory
// first, FillRandom). Then our own pwrite()s (io_util.h FileWriter) write the archive, so every write is accounted.
//
// Reader (DLIO's NPZReader in on_demand mode): every ReadSample() opens the file and reads ALL of it through the
// io_engine (storage.h: pread()s of up to kNpzReadChunk; odirect the same rounded up to 4 KiB, as DLIO's
// NPZReaderODIRECT; io_uring kUringPiece pieces, several in flight) into a per-reader buffer that only grows, then
// finds x.npy through the zip central directory and its LOCAL header (the local extra field may differ from the
// central one: numpy's zipfile writes a 20-byte ZIP64 extra only locally), inflates it if it is deflated (zlib,
// into a second grow-only buffer), parses the NPY header (npy.h) and locates the strided sample (a view, as numpy's
// x[..., i]; the bytes are not touched again: the read copied them, as DLIO's np.load does). No CRC check (DLIO's
// zipfile path checks one; its O_DIRECT reader does not). Any element size the NPY descr names is accepted on read.
// Returns the sample payload size prod(d1..dk) * itemsize.
//
// Thread-safety: a reader belongs to one thread; the Format object itself is immutable and shareable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "readers/format.h"
#include "readers/npy.h"  // NpyHeader

namespace dlio {

// Pieces of the whole-file read: a few syscalls even for DLIO's 140 MB unet3d files, and one op's latency stays
// comparable between small and large files.
inline constexpr size_t kNpzReadChunk = size_t{8} << 20;

// Options must have been validated (MakeFormat does it).
std::unique_ptr<Format> NewNpzFormat(const FormatOptions& options);

}  // namespace dlio
