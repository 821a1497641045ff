// zlib's crc32() and crc32_z() (the IEEE CRC-32 of zip and gzip), provided for the whole process through ISA-L.
//
// Why: libzip computes the CRC-32 of every stored member with zlib's crc32(), table-driven code that was a third of
// npz generation's CPU (perf: crc32_z 33%, ~2.2 GB/s here); ISA-L's crc32_gzip_refl() is the same function (same
// reflected polynomial 0xEDB88320, same pre- and post-inversion, so crc32(crc32(0, a), b) chains as in zlib) with
// carry-less multiplication, ~18 GB/s here. Writing stays with libzip: only its checksum arithmetic is faster.
// How: a definition in the executable takes precedence over libz.so's for every shared library that calls it (ELF
// symbol interposition), so libzip (and any other zlib user in the process) gets this one. dlio_formats makes the
// linker keep this object in every executable that links it (--undefined in readers/CMakeLists.txt), and
// format_test.cc checks the result against libz.so's own crc32.
#include <isa-l/crc.h>
#include <zlib.h>

extern "C" {

uLong crc32_z(uLong crc, const Bytef* buf, z_size_t len) {
  if (buf == nullptr) return 0;  // zlib: crc32(0, Z_NULL, 0) is the initial value
  return crc32_gzip_refl(static_cast<uint32_t>(crc), buf, len);
}

uLong crc32(uLong crc, const Bytef* buf, uInt len) { return crc32_z(crc, buf, len); }

}  // extern "C"
