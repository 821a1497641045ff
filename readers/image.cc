#include "readers/whole_file.h"
#include "readers/image.h"

// clang-format off
#include <cstdio>   // jpeglib.h needs FILE and size_t declared first
#include <jpeglib.h>
// clang-format on
#include <png.h>
#include <zlib.h>

#include <csetjmp>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/io_util.h"
#include "storage/open.h"

namespace dlio {
namespace {

// The grow-only buffer a decoder writes into; lives in the reader, outside the frames longjmp unwinds.
struct PixelBuffer {
  std::unique_ptr<uint8_t[]> data;
  uint64_t cap = 0;
  uint8_t* Ensure(uint64_t n) {
    if (n > cap || !data) {
      data.reset(new uint8_t[std::max<uint64_t>(n, 1)]);
      cap = std::max<uint64_t>(n, 1);
    }
    return data.get();
  }
};

// ---------------------------------------------------------------------------------------------------------------
// JPEG (libjpeg API of libjpeg-turbo). libjpeg reports errors by calling error_exit, which must not return: it
// longjmps back to the setjmp in the calling function. The frames between hold only trivially destructible locals.

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr c) {
  JpegError* e = reinterpret_cast<JpegError*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}
void JpegQuiet(j_common_ptr, int) {}  // warnings (e.g. "premature end of data") are not errors for us

// Encodes h x w gray pixels; *out is malloc'd by libjpeg (free() it). Returns false with `message` set on error.
bool EncodeJpeg(const uint8_t* pixels, int h, int w, unsigned char** out, unsigned long* out_size, char* message) {
  jpeg_compress_struct c;
  JpegError err;
  c.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  err.mgr.emit_message = JpegQuiet;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&c);
    std::strcpy(message, err.message);
    return false;
  }
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, out, out_size);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = 1;
  c.in_color_space = JCS_GRAYSCALE;
  jpeg_set_defaults(&c);  // quality 75, baseline, JFIF 1.01 with 1:1 density, islow DCT: Pillow's defaults too
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels + uint64_t{c.next_scanline} * static_cast<uint64_t>(w));
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  return true;
}

// Decodes a JPEG held in memory into `px`; returns the decoded bytes, or 0 with `message` set on error.
uint64_t DecodeJpeg(const uint8_t* data, uint64_t n, PixelBuffer& px, char* message) {
  jpeg_decompress_struct d;
  JpegError err;
  d.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  err.mgr.emit_message = JpegQuiet;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&d);
    std::strcpy(message, err.message);
    return 0;
  }
  jpeg_create_decompress(&d);
  jpeg_mem_src(&d, const_cast<unsigned char*>(data), static_cast<unsigned long>(n));
  jpeg_read_header(&d, TRUE);
  jpeg_start_decompress(&d);
  const uint64_t stride = uint64_t{d.output_width} * static_cast<uint64_t>(d.output_components);
  const uint64_t bytes = stride * d.output_height;
  uint8_t* out = px.Ensure(bytes);
  while (d.output_scanline < d.output_height) {
    JSAMPROW row = out + uint64_t{d.output_scanline} * stride;
    jpeg_read_scanlines(&d, &row, 1);
  }
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  if (bytes == 0) std::strcpy(message, "image has no pixels");
  return bytes;
}

// ---------------------------------------------------------------------------------------------------------------
// PNG (libpng). libpng also longjmps (png_jmpbuf) on errors; same rule for the frames in between.

// IDAT pieces: Pillow writes its encoder output in blocks of ImageFile.MAXBLOCK (64 KiB).
constexpr size_t kPngIdatBytes = size_t{64} << 10;

void PngAppend(png_structp p, png_bytep data, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(p))->append(reinterpret_cast<const char*>(data), n);
}
void PngFlush(png_structp) {}
void PngError(png_structp p, png_const_charp msg) {
  std::strncpy(static_cast<char*>(png_get_error_ptr(p)), msg, 255);
  png_longjmp(p, 1);
}
void PngWarning(png_structp, png_const_charp) {}

bool EncodePng(const uint8_t* pixels, int h, int w, std::string* out, char* message) {
  png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, message, PngError, PngWarning);
  if (p == nullptr) {
    std::strcpy(message, "png_create_write_struct failed");
    return false;
  }
  png_infop info = png_create_info_struct(p);
  if (info == nullptr || setjmp(png_jmpbuf(p))) {
    if (info == nullptr) std::strcpy(message, "png_create_info_struct failed");
    png_destroy_write_struct(&p, &info);
    return false;
  }
  png_set_write_fn(p, out, PngAppend, PngFlush);
  png_set_compression_level(p, Z_DEFAULT_COMPRESSION);
  png_set_compression_strategy(p, Z_DEFAULT_STRATEGY);  // libpng would pick Z_FILTERED; Pillow keeps the default
  png_set_compression_buffer_size(p, kPngIdatBytes);
  png_set_IHDR(p, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), 8, PNG_COLOR_TYPE_GRAY,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(p, info);
  for (int y = 0; y < h; ++y) {
    png_write_row(p, pixels + static_cast<uint64_t>(y) * static_cast<uint64_t>(w));
  }
  png_write_end(p, nullptr);
  png_destroy_write_struct(&p, &info);
  return true;
}

struct PngSource {
  const uint8_t* data;
  uint64_t size, pos;
};

void PngRead(png_structp p, png_bytep out, png_size_t n) {
  PngSource* s = static_cast<PngSource*>(png_get_io_ptr(p));
  if (n > s->size - s->pos) png_error(p, "file ends inside a chunk");
  std::memcpy(out, s->data + s->pos, n);
  s->pos += n;
}

uint64_t DecodePng(const uint8_t* data, uint64_t n, PixelBuffer& px, char* message) {
  if (n < 8 || png_sig_cmp(data, 0, 8) != 0) {
    std::strcpy(message, "no PNG signature");
    return 0;
  }
  png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, message, PngError, PngWarning);
  if (p == nullptr) {
    std::strcpy(message, "png_create_read_struct failed");
    return 0;
  }
  png_infop info = png_create_info_struct(p);
  PngSource src{data, n, 0};
  if (info == nullptr || setjmp(png_jmpbuf(p))) {
    if (info == nullptr) std::strcpy(message, "png_create_info_struct failed");
    png_destroy_read_struct(&p, &info, nullptr);
    return 0;
  }
  png_set_read_fn(p, &src, PngRead);
  png_read_info(p, info);
  png_set_packing(p);  // 1/2/4-bit samples one per byte, as numpy shows them
  const int passes = png_set_interlace_handling(p);
  png_read_update_info(p, info);
  const uint64_t stride = png_get_rowbytes(p, info);
  const uint64_t h = png_get_image_height(p, info);
  uint8_t* out = px.Ensure(stride * h);
  for (int pass = 0; pass < passes; ++pass) {
    for (uint64_t y = 0; y < h; ++y) png_read_row(p, out + y * stride, nullptr);
  }
  png_read_end(p, nullptr);
  png_destroy_read_struct(&p, &info, nullptr);
  if (stride * h == 0) std::strcpy(message, "image has no pixels");
  return stride * h;
}

// ---------------------------------------------------------------------------------------------------------------

enum class Codec { kJpeg, kPng };

class ImageSampleReader final : public SampleReader {
 public:
  ImageSampleReader(Codec codec, StorageTarget target, bool keep) : codec_(codec), file_(std::move(target), keep) {}

  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t, IoStats& stats) override {
    last_bytes_ = 0;
    absl::StatusOr<uint64_t> size = file_.Read(path, stats);
    if (!size.ok()) return size.status();
    char message[256] = {};
    const uint64_t bytes = codec_ == Codec::kJpeg ? DecodeJpeg(file_.data(), *size, pixels_, message)
                                                  : DecodePng(file_.data(), *size, pixels_, message);
    if (bytes == 0) {
      return absl::DataLossError(absl::StrCat(path, ": not a readable ", codec_ == Codec::kJpeg ? "JPEG" : "PNG",
                                              " image: ", message));
    }
    last_bytes_ = bytes;
    stats.AddSamples(1);
    return bytes;
  }

  std::string_view last_sample() const override {
    return {reinterpret_cast<const char*>(pixels_.data.get()), static_cast<size_t>(last_bytes_)};
  }

 private:
  const Codec codec_;
  internal::WholeFileReader file_;   // the whole file (dlio_ext.io_engine, reader.read_type)
  PixelBuffer pixels_;               // the decoded image; never shrinks
  uint64_t last_bytes_ = 0;
};

class ImageFormat final : public Format {
 public:
  ImageFormat(FormatOptions o, Codec codec) : Format(std::move(o)), codec_(codec) {}
  const char* name() const override { return codec_ == Codec::kJpeg ? "jpeg" : "png"; }
  const char* extension() const override { return name(); }
  std::unique_ptr<SampleReader> NewSampleReader() const override {
    return std::make_unique<ImageSampleReader>(codec_, options_.target(), options_.read_in_memory);
  }

  absl::Status Generate(const std::string& path, uint64_t seed, IoStats& stats) const override {
    const int h = static_cast<int>(options_.sample_dims[0]), w = static_cast<int>(options_.sample_dims[1]);
    std::vector<uint8_t> pixels(static_cast<size_t>(h) * static_cast<size_t>(w));
    internal::Rng(seed).Fill(pixels.data(), pixels.size());
    char message[256] = {};
    std::string png;
    unsigned char* jpeg = nullptr;
    unsigned long jpeg_size = 0;
    const bool ok = codec_ == Codec::kJpeg ? EncodeJpeg(pixels.data(), h, w, &jpeg, &jpeg_size, message)
                                           : EncodePng(pixels.data(), h, w, &png, message);
    struct Free {
      void operator()(unsigned char* p) const { std::free(p); }
    };
    std::unique_ptr<unsigned char, Free> jpeg_owner(jpeg);
    if (!ok) return absl::InternalError(absl::StrCat(path, ": ", name(), " encoding failed: ", message));
    const uint8_t* bytes = codec_ == Codec::kJpeg ? jpeg : reinterpret_cast<const uint8_t*>(png.data());
    const size_t n = codec_ == Codec::kJpeg ? jpeg_size : png.size();
    internal::FileWriter wr(NewWriteSink(options_.target()));
    absl::Status st = wr.Open(path);
    if (st.ok()) st = wr.Append(bytes, n, stats);
    if (st.ok()) st = wr.Finish(stats);
    // One image per file, but the file stands for samples_per_file samples (DLIO's sample map counts them).
    if (st.ok()) stats.AddSamples(static_cast<uint64_t>(options_.samples_per_file));
    return st;
  }

 private:
  const Codec codec_;
};

}  // namespace

std::unique_ptr<Format> NewJpegFormat(const FormatOptions& options) {
  return std::make_unique<ImageFormat>(options, Codec::kJpeg);
}
std::unique_ptr<Format> NewPngFormat(const FormatOptions& options) {
  return std::make_unique<ImageFormat>(options, Codec::kPng);
}

}  // namespace dlio
