// jpeg, png: DLIO's image formats (PIL.Image.fromarray(records).save(path)) behind the Format interface.
//
// File: ONE image per file whatever samples_per_file is (DLIO's generators write one image; its readers return
// that image for every sample index of the file). The image is sample_dims = (height, width) random uint8 pixels,
// 8-bit grayscale (PIL mode "L"):
//   jpeg  baseline (SOF0) JFIF through libjpeg-turbo with libjpeg's defaults: quality 75, 4:2:0 irrelevant for one
//         component, standard Huffman tables, islow DCT. These are the settings Pillow leaves in place when
//         save() gets no options, so with the same libjpeg-turbo the bytes match Pillow's for the same pixels.
//         JPEG sizes do not follow record_length_bytes (random noise compresses badly; DLIO has the same issue).
//   png   colour type 0, bit depth 8, not interlaced, through libpng: IHDR, IDAT, IEND only (as Pillow writes it),
//         zlib's default level and strategy (Pillow's defaults), IDAT pieces of up to 64 KiB.
// Generate() encodes in memory and writes the file with our own accounted pwrite()s.
//
// Reader (DLIO's ImageReader: PIL.Image.open + np.asarray, the whole file per sample): every ReadSample() opens the
// file, reads ALL of it with pread()s of up to 8 MiB into a per-reader buffer that only grows, and decodes it
// (libjpeg-turbo / libpng from memory) into a second grow-only buffer. The sample index is not checked (DLIO reads
// the file's one image for any index). Returns the decoded size width x height x channels.
// Errors from the libraries (which report them through longjmp) become DataLoss statuses naming the file.
//
// Thread-safety: a reader belongs to one thread; libjpeg and libpng keep no global state; the Format object itself
// is immutable and shareable.
#pragma once

#include <memory>

#include "readers/format.h"

namespace dlio {

// Options must have been validated (MakeFormat does it: 2-D uint8 samples).
std::unique_ptr<Format> NewJpegFormat(const FormatOptions& options);
std::unique_ptr<Format> NewPngFormat(const FormatOptions& options);

}  // namespace dlio
