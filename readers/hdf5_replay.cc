#include "readers/hdf5_replay.h"

#include <dlfcn.h>
#include <hdf5.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "readers/hdf5_internal.h"
#include "storage/hdf5_vfd.h"
#include "storage/storage.h"

namespace dlio::hdf5_internal {
namespace {

// Candidate plans rebuilt after a mismatch before the file stays with libhdf5 (hdf5_replay.h, "Proof").
constexpr int kMaxTries = 3;
// The plans a reader keeps (chunk tables and recorded steps): a paged index costs 24 bytes per chunk, so a reader
// meeting millions of chunks in an epoch would otherwise hold that much per loader thread. Past it the plans are
// dropped and files met again are recorded again (one or two libhdf5 samples each).
constexpr size_t kPlanBytes = size_t{64} << 20;

// Chunks queried one by one (libhdf5 1.10's H5Dget_chunk_info_by_coord walks the index from its start to the chunk,
// so learning n chunks costs n^2/2 steps: 256 chunks ~1 ms); above it the plan reads the chunk index from the bytes
// libhdf5 read (an unpaged fixed array; FixedArrayChunks).
constexpr uint64_t kQueryChunks = 256;

enum class Filter : uint8_t { kNone, kDeflate, kLzf, kSzip };

// libaec's SZ_com_t (szlib.h): the szip parameters, in its field order.
struct SzParams {
  int options_mask, bits_per_pixel, pixels_per_block, pixels_per_scanline;
};
using LzfDecompressFn = unsigned (*)(const void*, unsigned, void*, unsigned);
using SzDecompressFn = int (*)(void*, size_t*, const void*, size_t, SzParams*);

// liblzf's lzf_decompress (loaded globally by LzfAvailable(), as the HDF5 plugin needs it), or null.
LzfDecompressFn LzfDecompress() {
  static const LzfDecompressFn fn = [] {
    if (!LzfAvailable()) return LzfDecompressFn{nullptr};
    void* h = ::dlopen("liblzf.so.1", RTLD_NOW | RTLD_GLOBAL);  // kept for the process
    return h == nullptr ? nullptr : reinterpret_cast<LzfDecompressFn>(::dlsym(h, "lzf_decompress"));
  }();
  return fn;
}

// libsz's SZ_BufftoBuffDecompress (libaec, the library libhdf5's szip filter calls), or null.
SzDecompressFn SzDecompress() {
  static const SzDecompressFn fn = [] {
    void* h = ::dlopen("libsz.so.2", RTLD_NOW);  // kept for the process
    return h == nullptr ? nullptr : reinterpret_cast<SzDecompressFn>(::dlsym(h, "SZ_BufftoBuffDecompress"));
  }();
  return fn;
}

struct ChunkRef {
  uint64_t addr = 0, size = 0;
  bool raw = false;    // the (optional) filter was skipped when it was written: stored as it is
  bool known = false;  // learnt (a paged index is learnt page by page)
};

// One records_k dataset: how its data reads and the sample's bytes follow from the sample index.
struct Layout {
  std::string why_not;  // non-empty: no provable plan (libhdf5 stays for the file)
  bool chunked = false;
  int rank = 0;
  uint64_t dims[kMaxRank] = {}, maxdims[kMaxRank] = {}, chunk[kMaxRank] = {}, grid[kMaxRank] = {};
  uint64_t chunk_stride[kMaxRank] = {}, sample_stride[kMaxRank] = {};  // elements per step of each axis
  uint64_t elem = 0, sample_bytes = 0;
  uint64_t addr = 0, dset_bytes = 0, sieve = 0;  // contiguous; sieve: libhdf5's sieve buffer, 0 = none
  Filter filter = Filter::kNone;                 // chunked:
  unsigned szip[4] = {};
  uint64_t chunk_bytes = 0, row_chunks = 0;  // decoded chunk bytes; chunks per sample (the chunk row)
  std::vector<ChunkRef> chunks;              // every chunk, row-major over the chunk grid
  // The fixed-array chunk index read from the recorded bytes (FixedArrayHeader); fa_n == 0: none. fa_page: entries
  // per page of a paged array (0 = unpaged).
  uint64_t fa_n = 0, fa_page = 0, fa_haddr = 0, fa_daddr = 0, fa_esize = 0, fa_so = 0;
  bool fa_filtered = false;
  uint64_t fa_down[kMaxRank] = {};  // fixed-array index steps per chunk-grid axis (over the maximum dimensions)
};

uint64_t DataReads(const Layout& l) { return l.chunked ? l.row_chunks : 1; }

// The j-th data read of sample i (hdf5_replay.h, "The plan"); eoa is the file's end of address.
Hdf5Io DataRead(const Layout& l, uint64_t i, uint64_t j, uint64_t eoa) {
  if (l.chunked) {
    const ChunkRef& c = l.chunks[(i / l.chunk[0]) * l.row_chunks + j];
    return {Hdf5Io::Kind::kRead, c.addr, c.size};
  }
  const uint64_t rel = i * l.sample_bytes, off = l.addr + rel;
  uint64_t len = l.sample_bytes;
  // H5D__contig_readvv_sieve_cb: a read no larger than the sieve buffer fills the buffer from its offset, short of
  // the end of address and of the dataset's end.
  if (l.sieve > 0 && len <= l.sieve) len = std::min({l.sieve, eoa > off ? eoa - off : 0, l.dset_bytes - rel});
  return {Hdf5Io::Kind::kRead, off, len};
}

struct Step {
  Hdf5Io io;
  int32_t dataset = -1;  // >= 0: the `index`-th data read of records_<dataset>; -1: fixed (metadata, open, close)
  uint32_t index = 0;
};

enum class State : uint8_t { kCandidate, kProven };

// The recorded requests of one sample, for the samples whose index reads are the same: all of a file's samples,
// or those of one page (or pair of pages) of a paged fixed array.
struct Variant {
  State state = State::kCandidate;
  uint32_t recorded = 0;  // the sample the steps were recorded with
  std::vector<Step> steps;
};

struct FilePlan {
  bool libhdf5 = false;  // no plan: libhdf5 reads the file (the reason in ReplayCounters::last_fallback)
  int mismatches = 0;    // plans libhdf5's reads of a later sample contradicted
  uint64_t eoa = 0;
  std::vector<Layout> layouts;  // records_0..k-1
  std::vector<Variant> variants;
  std::unordered_map<uint64_t, uint32_t> variant_of;  // PageKey -> variants index
};

// Tags the recorded requests of sample s: each data read the layouts give, in order. False when one is missing.
bool Tag(const FilePlan& f, Variant& v, const std::vector<Hdf5Io>& trace, uint32_t s) {
  v.steps.clear();
  v.state = State::kCandidate;
  v.recorded = s;
  size_t k = 0;
  uint64_t j = 0;
  for (const Hdf5Io& io : trace) {
    Step st{io, -1, 0};
    if (k < f.layouts.size() && io == DataRead(f.layouts[k], s, j, f.eoa)) {
      st.dataset = static_cast<int32_t>(k);
      st.index = static_cast<uint32_t>(j);
      if (++j == DataReads(f.layouts[k])) ++k, j = 0;
    }
    v.steps.push_back(st);
  }
  return k == f.layouts.size();
}

// True when the variant gives exactly `trace` for sample s.
bool Matches(const FilePlan& f, const Variant& v, const std::vector<Hdf5Io>& trace, uint32_t s) {
  if (trace.size() != v.steps.size()) return false;
  for (size_t n = 0; n < trace.size(); ++n) {
    const Step& st = v.steps[n];
    const Hdf5Io want = st.dataset < 0 ? st.io : DataRead(f.layouts[st.dataset], s, st.index, f.eoa);
    if (want != trace[n]) return false;
  }
  return true;
}

// True when samples a and b read the same data (the same contiguous range, the same chunk row).
bool SameData(const FilePlan& f, uint32_t a, uint32_t b) {
  for (const Layout& l : f.layouts) {
    if (l.chunked ? a / l.chunk[0] != b / l.chunk[0] : a != b) return false;
  }
  return true;
}

void Strides(Layout& l) {
  l.chunk_stride[l.rank - 1] = l.sample_stride[l.rank - 1] = 1;
  for (int d = l.rank - 2; d >= 0; --d) {
    l.chunk_stride[d] = l.chunk_stride[d + 1] * l.chunk[d + 1];
    l.sample_stride[d] = l.sample_stride[d + 1] * (d + 1 < l.rank ? l.dims[d + 1] : 1);
  }
}

// A chunked dataset's filter and chunk table; sets why_not when no plan can be proven.
void LearnChunks(hid_t dset, hid_t dcpl, Layout& l) {
  hsize_t c[kMaxRank];
  if (H5Pget_chunk(dcpl, l.rank, c) != l.rank) return void(l.why_not = "the chunk shape cannot be read");
  l.chunk_bytes = l.elem;
  for (int d = 0; d < l.rank; ++d) l.chunk[d] = c[d], l.chunk_bytes *= c[d];
  const int nf = H5Pget_nfilters(dcpl);
  if (nf > 1) return void(l.why_not = "more than one filter");
  if (nf == 1) {
    unsigned flags = 0, cd[8] = {};
    size_t n = 8;
    const H5Z_filter_t id = H5Pget_filter2(dcpl, 0, &flags, &n, cd, 0, nullptr, nullptr);
    if (id == H5Z_FILTER_DEFLATE) {
      l.filter = Filter::kDeflate;
    } else if (id == kLzfFilter && LzfDecompress() != nullptr) {
      l.filter = Filter::kLzf;
    } else if (id == H5Z_FILTER_SZIP && n == 4 && SzDecompress() != nullptr) {
      l.filter = Filter::kSzip;
      std::copy(cd, cd + 4, l.szip);
    } else {
      return void(l.why_not = absl::StrCat("filter ", id, " (only gzip, and lzf or szip when loadable)"));
    }
  } else {
    Hid dapl(H5Dget_access_plist(dset), H5Pclose);
    size_t slots = 0, nbytes = 0;
    double w0 = 0;
    if (!dapl.ok() || H5Pget_chunk_cache(dapl.get(), &slots, &nbytes, &w0) < 0 || l.chunk_bytes > nbytes) {
      return void(l.why_not = "unfiltered chunks larger than libhdf5's chunk cache (read in parts, sieved)");
    }
  }
  uint64_t total = 1;
  for (int d = 0; d < l.rank; ++d) total *= (l.grid[d] = (l.dims[d] + l.chunk[d] - 1) / l.chunk[d]);
  l.row_chunks = l.grid[0] == 0 ? 0 : total / l.grid[0];
  l.chunks.resize(total);
}

// The first element's coordinates of chunk idx (row-major over the chunk grid), as libhdf5's chunk queries take them.
void ChunkOrigin(const Layout& l, uint64_t idx, hsize_t* off) {
  for (int d = l.rank - 1; d >= 0; --d) {
    off[d] = (idx % l.grid[d]) * l.chunk[d];
    idx /= l.grid[d];
  }
}

// Every chunk's address, stored size and filter mask by libhdf5's own query (the driver probing: it fails when
// libhdf5 would have to read a part of the index it does not hold).
bool QueryChunks(hid_t dset, Layout& l) {
  hsize_t off[kMaxRank] = {};
  for (uint64_t idx = 0; idx < l.chunks.size(); ++idx) {
    ChunkOrigin(l, idx, off);
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(dset, off, &mask, &addr, &size) < 0 || addr == HADDR_UNDEF) return false;
    l.chunks[idx] = {addr, size, l.filter == Filter::kNone || (mask & 1u) != 0, true};
  }
  return true;
}

uint64_t Le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// What the recording holds of a dataset's chunk index: the requests and the bytes each returned.
struct Recorded {
  const std::vector<Hdf5Io>& trace;
  const std::vector<uint8_t>& bytes;
  // The recorded bytes [addr, addr + n) (inside one read), or null.
  const uint8_t* At(uint64_t addr, uint64_t n) const {
    uint64_t off = 0;
    for (const Hdf5Io& io : trace) {
      if (io.kind != Hdf5Io::Kind::kRead) continue;
      if (addr >= io.addr && addr + n <= io.addr + io.size && off + io.size <= bytes.size()) {
        return bytes.data() + off + (addr - io.addr);
      }
      off += io.size;
    }
    return nullptr;
  }
  // The file address of the last checksummed metadata block with this signature and `len` bytes (checksum
  // included) libhdf5 read, or 0 (address 0 is the superblock).
  uint64_t Last(const char sig[4], uint64_t len) const {
    uint64_t off = 0, found = 0;
    for (const Hdf5Io& io : trace) {
      if (io.kind != Hdf5Io::Kind::kRead) continue;
      for (uint64_t i = 0; off + io.size <= bytes.size() && i + len <= io.size; ++i) {
        const uint8_t* p = bytes.data() + off + i;
        if (std::memcmp(p, sig, 4) == 0 && Le(p + len - 4, 4) == Lookup3(p, len - 4)) found = io.addr + i;
      }
      off += io.size;
    }
    return found;
  }
};

// The dataset's fixed-array chunk index header as libhdf5 read it for the recorded sample (HDF5 file format 3.0,
// "Fixed Array Header" FAHD, checksummed; the last one read is the dataset's: its H5Dread looked it up last).
// Element i of the array is the chunk of linear index i over the grid of the maximum dimensions
// (H5D__farray_idx_get_addr): its address and, for filtered chunks, its stored size and filter mask.
bool FixedArrayHeader(const Recorded& r, Layout& l) {
  const uint8_t* sb = r.At(0, 16);
  if (sb == nullptr || std::memcmp(sb + 1, "HDF", 3) != 0) return false;
  const size_t so = sb[8] >= 2 ? sb[9] : sb[13], sl = sb[8] >= 2 ? sb[10] : sb[14];  // sizes of offsets, lengths
  if (so < 1 || so > 8 || sl < 1 || sl > 8) return false;
  const uint64_t hlen = 4 + 1 + 1 + 1 + 1 + sl + so + 4, haddr = r.Last("FAHD", hlen);
  const uint8_t* h = haddr == 0 ? nullptr : r.At(haddr, hlen);
  if (h == nullptr || h[7] > 32) return false;
  l.fa_filtered = h[5] == 1;
  l.fa_esize = h[6];
  l.fa_n = Le(h + 8, sl);
  l.fa_page = l.fa_n > (uint64_t{1} << h[7]) ? uint64_t{1} << h[7] : 0;
  l.fa_daddr = Le(h + 8 + sl, so);
  l.fa_haddr = haddr;
  l.fa_so = so;
  uint64_t max_chunks = 1;
  for (int d = l.rank - 1; d >= 0; --d) {
    if (l.maxdims[d] == H5S_UNLIMITED) return false;
    l.fa_down[d] = max_chunks;
    max_chunks *= (l.maxdims[d] + l.chunk[d] - 1) / l.chunk[d];
  }
  return l.fa_filtered == (l.filter != Filter::kNone) && l.fa_esize >= so + (l.fa_filtered ? 5 : 0) &&
         max_chunks == l.fa_n;  // else not this dataset's
}

uint64_t FixedArrayIndex(const Layout& l, uint64_t chunk) {
  uint64_t fa = 0;
  for (int d = l.rank - 1; d >= 0; --d) {
    fa += (chunk % l.grid[d]) * l.fa_down[d];
    chunk /= l.grid[d];
  }
  return fa;
}

// The chunks whose fixed-array entries the recording holds (a "Data Block" FADB, or for a paged array its prefix
// and the pages read, each checksummed) become known. False when the array's block is not there or is not sound.
bool FixedArrayFill(const Recorded& r, Layout& l) {
  const uint64_t so = l.fa_so, es = l.fa_esize, n = l.fa_n, page = l.fa_page == 0 ? n : l.fa_page;
  const uint64_t pages = (n + page - 1) / page, bitmap = l.fa_page == 0 ? 0 : (pages + 7) / 8;
  const uint64_t prefix = 4 + 1 + 1 + so + bitmap + 4;  // signature, version, class, header, page bitmap, checksum
  const uint8_t* b = r.At(l.fa_daddr, l.fa_page == 0 ? prefix + n * es : prefix);
  const uint64_t sum_at = l.fa_page == 0 ? prefix + n * es - 4 : prefix - 4;
  if (b == nullptr || std::memcmp(b, "FADB", 4) != 0 || Le(b + sum_at, 4) != Lookup3(b, sum_at) ||
      Le(b + 6, so) != l.fa_haddr) {
    return false;
  }
  std::vector<const uint8_t*> at(pages, nullptr);  // each page's recorded entries, when it was read and is sound
  for (uint64_t p = 0; p < pages; ++p) {
    const uint64_t in_page = std::min(page, n - p * page);
    if (l.fa_page == 0) {
      at[p] = b + 6 + so;  // unpaged: the entries sit between the header address and the checksum
    } else if (const uint8_t* pg = r.At(l.fa_daddr + prefix + p * (page * es + 4), in_page * es + 4);
               pg != nullptr && Le(pg + in_page * es, 4) == Lookup3(pg, in_page * es)) {
      at[p] = pg;
    }
  }
  const uint64_t undef = so == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * so)) - 1;
  for (uint64_t idx = 0; idx < l.chunks.size(); ++idx) {
    if (l.chunks[idx].known) continue;
    const uint64_t fa = FixedArrayIndex(l, idx), p = fa / page;
    const uint8_t* e = at[p] == nullptr ? nullptr : at[p] + (fa - p * page) * es;
    if (e == nullptr || Le(e, so) == undef) continue;  // a page not read, or a chunk not allocated
    ChunkRef& c = l.chunks[idx];
    c.addr = Le(e, so);
    c.size = l.fa_filtered ? Le(e + so, es - so - 4) : l.chunk_bytes;
    c.raw = !l.fa_filtered || (Le(e + es - 4, 4) & 1u) != 0;
    c.known = true;
  }
  return true;
}

// True when every chunk of sample i's row is known.
bool RowKnown(const Layout& l, uint32_t i) {
  for (uint64_t j = 0; j < l.row_chunks; ++j) {
    if (!l.chunks[i / l.chunk[0] * l.row_chunks + j].known) return false;
  }
  return true;
}

// Checks a few chunks of the table against libhdf5's own query (the driver probing): the recorded sample's row.
bool ChunksAgree(hid_t dset, const Layout& l, uint32_t sample) {
  hsize_t off[kMaxRank] = {};
  for (uint64_t j = 0; j < l.row_chunks; ++j) {
    const uint64_t idx = sample / l.chunk[0] * l.row_chunks + j;
    ChunkOrigin(l, idx, off);
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(dset, off, &mask, &addr, &size) < 0 || addr != l.chunks[idx].addr ||
        size != l.chunks[idx].size) {
      return false;
    }
  }
  return true;
}

// The chunk table at the file's first recorded sample. Up to kQueryChunks chunks libhdf5's own query (it walks the
// index from its start, and fails, probing, when an index block before the chunk was not read: an extensible array
// past its index block, a v2 B-tree past its root); above, a fixed array read from the recorded bytes, checked
// against the query for the sample's chunks when they lie in its first page (the query can reach them).
bool LearnChunkTable(hid_t dset, const Recorded& rec, uint32_t sample, Layout& l) {
  if (l.chunks.size() <= kQueryChunks) return QueryChunks(dset, l);
  if (!FixedArrayHeader(rec, l) || !FixedArrayFill(rec, l) || !RowKnown(l, sample)) return false;
  const uint64_t last = FixedArrayIndex(l, (sample / l.chunk[0] + 1) * l.row_chunks - 1);
  return last >= (l.fa_page != 0 ? l.fa_page : l.fa_n) || ChunksAgree(dset, l, sample);
}

// What records_k of the open file is, learnt with no I/O of its own (hdf5_replay.h, "Contract").
void LearnLayout(hid_t dset, uint64_t sample_bytes, uint64_t sieve, const Recorded& rec, uint32_t sample,
                 Layout& l) {
  Hid dcpl(H5Dget_create_plist(dset), H5Pclose);
  Hid space(H5Dget_space(dset), H5Sclose);
  Hid type(H5Dget_type(dset), H5Tclose);
  if (!dcpl.ok() || !space.ok() || !type.ok()) return void(l.why_not = "the dataset cannot be inspected");
  l.rank = H5Sget_simple_extent_ndims(space.get());
  if (l.rank < 1 || l.rank > kMaxRank) return void(l.why_not = "rank out of range");
  hsize_t dims[kMaxRank], maxdims[kMaxRank];
  H5Sget_simple_extent_dims(space.get(), dims, maxdims);
  std::copy(dims, dims + l.rank, l.dims);
  std::copy(maxdims, maxdims + l.rank, l.maxdims);
  l.elem = H5Tget_size(type.get());
  l.sample_bytes = sample_bytes;
  switch (H5Pget_layout(dcpl.get())) {
    case H5D_CONTIGUOUS:
      l.addr = H5Dget_offset(dset);
      if (l.addr == HADDR_UNDEF) return void(l.why_not = "the dataset's storage is not allocated");
      l.dset_bytes = l.dims[0] * sample_bytes;
      l.sieve = std::min(sieve, l.dset_bytes);  // H5D__contig_init: the sieve buffer is at most the dataset
      return;
    case H5D_CHUNKED:
      for (int d = 0; d < l.rank; ++d) l.chunk[d] = 1;  // for Strides() before the chunk shape is known
      LearnChunks(dset, dcpl.get(), l);
      l.chunked = true;
      Strides(l);
      if (!l.why_not.empty()) return;
      if (!LearnChunkTable(dset, rec, sample, l)) {
        l.why_not = "the chunk index is not all in memory after one sample and is no fixed array (unlimited axes: "
                    "other samples read other parts of it)";
      }
      return;
    default:
      return void(l.why_not = "compact or virtual layout");
  }
}

// Copies sample i's part of chunk m of its chunk row from the decoded chunk to the sample's bytes.
void CopySlice(const Layout& l, const uint8_t* chunk, uint64_t i, uint64_t m, uint8_t* sample) {
  const uint64_t e = l.elem;
  const uint8_t* base = chunk + (i % l.chunk[0]) * l.chunk_stride[0] * e;
  if (l.rank == 1) return void(std::memcpy(sample, base, e));
  uint64_t g[kMaxRank] = {}, ext[kMaxRank] = {}, idx[kMaxRank] = {};
  for (int d = l.rank - 1; d >= 1; --d) {
    g[d] = m % l.grid[d];
    m /= l.grid[d];
    ext[d] = std::min(l.chunk[d], l.dims[d] - g[d] * l.chunk[d]);
  }
  const int last = l.rank - 1;
  const size_t row = static_cast<size_t>(ext[last] * e);
  while (true) {
    uint64_t src = 0, dst = g[last] * l.chunk[last];
    for (int d = 1; d < last; ++d) {
      src += idx[d] * l.chunk_stride[d];
      dst += (g[d] * l.chunk[d] + idx[d]) * l.sample_stride[d];
    }
    std::memcpy(sample + dst * e, base + src * e, row);
    int d = last - 1;
    while (d >= 1 && ++idx[d] == ext[d]) idx[d--] = 0;
    if (d < 1) return;
  }
}

// Which index pages sample i's lookups read: (first << 32 | last) + 1 of records_0's paged fixed array, else 0.
uint64_t PageKey(const FilePlan& f, uint32_t i) {
  const Layout& l = f.layouts[0];
  if (!l.chunked || l.fa_page == 0) return 0;
  const uint64_t row = i / l.chunk[0] * l.row_chunks;
  uint64_t lo = ~uint64_t{0}, hi = 0;
  for (uint64_t j = 0; j < l.row_chunks; ++j) {
    const uint64_t p = FixedArrayIndex(l, row + j) / l.fa_page;
    lo = std::min(lo, p), hi = std::max(hi, p);
  }
  return (lo << 32 | hi) + 1;
}

// The replay engine (hdf5_replay.h).
class Hdf5ReplayReader final : public SampleReader {
 public:
  Hdf5ReplayReader(int64_t datasets, StorageTarget target) : lib_(datasets, std::move(target)) {
    std::memset(&z_, 0, sizeof z_);
    z_ok_ = inflateInit(&z_) == Z_OK;
  }
  Hdf5ReplayReader(const Hdf5ReplayReader&) = delete;
  Hdf5ReplayReader& operator=(const Hdf5ReplayReader&) = delete;
  ~Hdf5ReplayReader() override {
    if (z_ok_) inflateEnd(&z_);
  }

  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats) override {
    auto it = plans_.find(path);
    if (it == plans_.end()) return Record(path, sample, nullptr, stats);
    FilePlan& f = it->second;
    if (f.libhdf5) {
      ++counters_.fallback;
      return Lib(path, sample, stats, nullptr);
    }
    auto v = f.variant_of.find(PageKey(f, sample));
    if (v == f.variant_of.end() || (f.layouts[0].chunked && !RowKnown(f.layouts[0], sample))) {
      return Record(path, sample, &f, stats);
    }
    Variant& var = f.variants[v->second];
    if (var.state == State::kProven || SameData(f, sample, var.recorded)) return Replay(path, sample, f, var, stats);
    return Verify(path, sample, f, var, stats);
  }

  std::string_view last_sample() const override {
    if (last_lib_) return lib_.last_sample();
    return {reinterpret_cast<const char*>(sample_.data()), static_cast<size_t>(last_bytes_)};
  }
  const ReplayCounters& counters() const { return counters_; }
  absl::StatusOr<Hdf5StorageAccess*> Driver() { return lib_.Access(); }
  void set_plan_limit(size_t bytes) { plan_limit_ = bytes; }

 private:
  // Dataset probe of the file's first recorded sample: learns each records_k's layout with the driver probing.
  class LayoutProbe final : public Hdf5DatasetProbe {
   public:
    LayoutProbe(FilePlan& f, Hdf5StorageAccess& a, uint64_t sieve, const Recorded& rec, uint32_t sample)
        : f_(f), a_(a), sieve_(sieve), rec_(rec), sample_(sample) {}
    void Probe(int64_t k, hid_t dset, uint64_t sample_bytes) override {
      a_.set_probe(true);
      LearnLayout(dset, sample_bytes, sieve_, rec_, sample_, f_.layouts[static_cast<size_t>(k)]);
      a_.set_probe(false);
      H5Eclear2(H5E_DEFAULT);
      a_.clear_error();
    }

   private:
    FilePlan& f_;
    Hdf5StorageAccess& a_;
    const uint64_t sieve_;
    const Recorded& rec_;
    const uint32_t sample_;
  };

  absl::StatusOr<uint64_t> Lib(const std::string& path, uint32_t sample, IoStats& stats, Hdf5DatasetProbe* probe) {
    last_lib_ = true;
    return lib_.ReadSample(path, sample, stats, probe);
  }

  // Reads through libhdf5 with the driver's requests recorded into trace_ (and their bytes into trace_bytes_).
  absl::StatusOr<uint64_t> ReadRecorded(const std::string& path, uint32_t sample, IoStats& stats,
                                        Hdf5DatasetProbe* probe, bool bytes) {
    absl::StatusOr<Hdf5StorageAccess*> a = lib_.Access();
    if (!a.ok()) return a.status();
    trace_.clear();
    trace_bytes_.clear();
    (*a)->set_asked_log(&trace_);
    (*a)->set_asked_bytes(bytes ? &trace_bytes_ : nullptr);  // the chunk index may be read from them
    absl::StatusOr<uint64_t> n = Lib(path, sample, stats, probe);
    (*a)->set_asked_log(nullptr);
    (*a)->set_asked_bytes(nullptr);
    ++counters_.recorded;
    return n;
  }

  absl::StatusOr<uint64_t> Record(const std::string& path, uint32_t sample, FilePlan* f, IoStats& stats);
  absl::StatusOr<uint64_t> Verify(const std::string& path, uint32_t sample, FilePlan& f, Variant& v, IoStats& stats);
  absl::StatusOr<uint64_t> Replay(const std::string& path, uint32_t sample, const FilePlan& f, const Variant& v,
                                  IoStats& stats);
  absl::Status ReadData(Hdf5StorageAccess& a, const std::string& path, const Layout& l, uint64_t eoa,
                        uint32_t sample, uint32_t index, uint8_t* out);
  absl::Status Decode(const Layout& l, const ChunkRef& c, const std::string& path);
  std::string Unprovable(const FilePlan& f, uint32_t sample) const;
  void GiveUp(FilePlan& f, std::string why) {
    f.libhdf5 = true;
    f.variants = {};
    f.variant_of = {};
    f.layouts = {};
    counters_.last_fallback = std::move(why);
  }
  void SizeBuffers(const FilePlan& f);

  Hdf5LibReader lib_;
  std::unordered_map<std::string, FilePlan> plans_;  // per path, made at the file's first sample
  std::vector<Hdf5Io> trace_;                        // the recorded sample's requests
  std::vector<uint8_t> trace_bytes_;                 // and the bytes they returned (when the index is read)
  AlignedBuffer scratch_, chunk_in_, chunk_out_, sample_;
  uint64_t last_bytes_ = 0;
  bool last_lib_ = false;
  z_stream z_;
  bool z_ok_ = false;
  ReplayCounters counters_;
  size_t plan_bytes_ = 0, plan_limit_ = kPlanBytes;  // what plans_ holds, roughly; its limit
};

// Why no plan can be made from the recording of `sample` ("" = it can: every layout learnt, the sample's chunks
// known and its data reads among the recorded requests).
std::string Hdf5ReplayReader::Unprovable(const FilePlan& f, uint32_t sample) const {
  for (size_t k = 0; k < f.layouts.size(); ++k) {
    const Layout& l = f.layouts[k];
    if (!l.why_not.empty()) return absl::StrCat(RecordsName(static_cast<int64_t>(k)), ": ", l.why_not);
    if (l.chunked && l.fa_page != 0 && f.layouts.size() > 1) {
      return "a paged chunk index with several datasets per record (one plan per page of one index only)";
    }
    if (l.chunked && !RowKnown(l, sample)) {
      return absl::StrCat("the chunk index entries of sample ", sample, " are not among the bytes libhdf5 read");
    }
  }
  return "";
}

// A sample of no plan yet (f null: the file's first; else one of an index page without a plan): libhdf5 reads it
// with the driver's requests recorded; at the file's first, each dataset's layout is learnt, and a paged index
// learns the entries of the pages read. The recording becomes the candidate plan for the sample's pages.
absl::StatusOr<uint64_t> Hdf5ReplayReader::Record(const std::string& path, uint32_t sample, FilePlan* f,
                                                  IoStats& stats) {
  absl::StatusOr<Hdf5StorageAccess*> a = lib_.Access();
  if (!a.ok()) return a.status();
  size_t sieve = 0;
  if (((*a)->features() & H5FD_FEAT_DATA_SIEVE) != 0 && H5Pget_sieve_buf_size((*a)->fapl(), &sieve) < 0) sieve = 0;
  FilePlan fresh;
  fresh.layouts.resize(static_cast<size_t>(lib_.datasets()));
  const Recorded rec{trace_, trace_bytes_};
  LayoutProbe probe(fresh, **a, sieve, rec, sample);
  const bool paged = f != nullptr && f->layouts[0].chunked && f->layouts[0].fa_page != 0;
  absl::StatusOr<uint64_t> n =
      ReadRecorded(path, sample, stats, f == nullptr ? &probe : nullptr, f == nullptr || paged);
  if (!n.ok()) return n;  // no plan: the file's next sample tries again
  if (f == nullptr) {
    size_t bytes = trace_.size() * sizeof(Step) + path.size();
    for (const Layout& l : fresh.layouts) bytes += l.chunks.size() * sizeof(ChunkRef);
    if (plan_bytes_ + bytes > plan_limit_) {
      plans_.clear();
      plan_bytes_ = 0;
      ++counters_.plans_dropped;
    }
    plan_bytes_ += bytes;
    f = &plans_.emplace(path, std::move(fresh)).first->second;
    f->eoa = (*a)->last_eoa();
  } else if (paged && !FixedArrayFill(rec, f->layouts[0])) {
    f->layouts[0].why_not = "its paged fixed array's data block was not read";
  }
  std::string why = Unprovable(*f, sample);
  const uint64_t key = why.empty() ? PageKey(*f, sample) : 0;
  auto [it, added] = f->variant_of.emplace(key, static_cast<uint32_t>(f->variants.size()));
  if (added) f->variants.emplace_back();
  if (why.empty() && !Tag(*f, f->variants[it->second], trace_, sample)) {
    why = absl::StrCat("the recorded reads of sample ", sample, " lack the data reads of its layout");
  }
  if (!why.empty()) {
    GiveUp(*f, absl::StrCat(path, ": ", why));
    return n;
  }
  SizeBuffers(*f);
  return n;
}

// A sample of a candidate plan with other data reads than the recorded one: libhdf5 reads it, recorded, and the
// plan is proven when it gives exactly those requests (hdf5_replay.h, "Proof"). Otherwise the plan is rebuilt from
// this sample, and after kMaxTries such rebuilds in a file libhdf5 keeps it.
absl::StatusOr<uint64_t> Hdf5ReplayReader::Verify(const std::string& path, uint32_t sample, FilePlan& f, Variant& v,
                                                  IoStats& stats) {
  absl::StatusOr<uint64_t> n = ReadRecorded(path, sample, stats, nullptr, false);
  if (!n.ok()) return n;
  if (Matches(f, v, trace_, sample)) {
    v.state = State::kProven;
  } else if (++f.mismatches >= kMaxTries || !Tag(f, v, trace_, sample)) {
    GiveUp(f, absl::StrCat(path, ": libhdf5's reads of sample ", sample, " differ from the plan"));
  } else {
    SizeBuffers(f);
  }
  return n;
}

// Buffers for any sample of the plan, so that replay allocates nothing.
void Hdf5ReplayReader::SizeBuffers(const FilePlan& f) {
  uint64_t scratch = 1, in = 1, out = 1, sample = 1;
  for (const Variant& v : f.variants) {
    for (const Step& st : v.steps) scratch = std::max(scratch, st.io.size);
  }
  for (const Layout& l : f.layouts) {
    sample += l.sample_bytes;
    if (!l.chunked) scratch = std::max(scratch, std::max(l.sieve, l.sample_bytes));
    for (const ChunkRef& c : l.chunks) in = std::max(in, c.known ? c.size : 0);
    if (l.chunked) out = std::max(out, l.chunk_bytes);
  }
  scratch_.Reserve(scratch);
  chunk_in_.Reserve(in);
  chunk_out_.Reserve(out);
  sample_.Reserve(sample);
}

absl::StatusOr<uint64_t> Hdf5ReplayReader::Replay(const std::string& path, uint32_t sample, const FilePlan& f,
                                                  const Variant& v, IoStats& stats) {
  uint64_t total = 0;
  for (const Layout& l : f.layouts) {
    if (sample >= l.dims[0]) {
      return absl::OutOfRangeError(absl::StrCat(path, ": sample ", sample, " requested, file has ", l.dims[0]));
    }
    total += l.sample_bytes;
  }
  absl::StatusOr<Hdf5StorageAccess*> got = lib_.Access();
  if (!got.ok()) return got.status();
  Hdf5StorageAccess& a = **got;
  a.set_stats(&stats);
  last_lib_ = false;
  last_bytes_ = 0;
  bool open = false;
  absl::Status st;
  for (const Step& s : v.steps) {
    if (s.io.kind == Hdf5Io::Kind::kOpen) {
      st = a.Open(path);
      open = st.ok();
    } else if (s.io.kind == Hdf5Io::Kind::kClose) {
      a.Close();
      open = false;
    } else if (s.dataset < 0) {
      st = a.Read(s.io.addr, static_cast<size_t>(s.io.size), scratch_.data());
    } else {
      uint64_t at = 0;  // records_k's place in the sample: the datasets before it, back to back
      for (int32_t k = 0; k < s.dataset; ++k) at += f.layouts[static_cast<size_t>(k)].sample_bytes;
      st = ReadData(a, path, f.layouts[static_cast<size_t>(s.dataset)], f.eoa, sample, s.index, sample_.data() + at);
    }
    if (!st.ok()) break;
  }
  if (!st.ok()) {
    if (open) a.Close();
    return st;
  }
  last_bytes_ = total;
  ++counters_.replayed;
  stats.AddSamples(1);
  return total;
}

// One data read of a dataset for the sample: contiguous bytes read in place (or copied out of the sieved read), a
// chunk read, decoded and the sample's part of it copied out.
absl::Status Hdf5ReplayReader::ReadData(Hdf5StorageAccess& a, const std::string& path, const Layout& l, uint64_t eoa,
                                        uint32_t sample, uint32_t index, uint8_t* out) {
  if (!l.chunked) {
    const Hdf5Io io = DataRead(l, sample, index, eoa);
    if (io.size == l.sample_bytes) return a.Read(io.addr, static_cast<size_t>(io.size), out);
    absl::Status st = a.Read(io.addr, static_cast<size_t>(io.size), scratch_.data());
    if (st.ok()) std::memcpy(out, scratch_.data(), static_cast<size_t>(l.sample_bytes));
    return st;
  }
  const ChunkRef& c = l.chunks[(sample / l.chunk[0]) * l.row_chunks + index];
  absl::Status st = a.Read(c.addr, static_cast<size_t>(c.size), chunk_in_.data());
  if (st.ok() && !c.raw) st = Decode(l, c, path);
  if (st.ok()) CopySlice(l, c.raw ? chunk_in_.data() : chunk_out_.data(), sample, index, out);
  return st;
}

// Decompresses chunk_in_ (c.size bytes) into chunk_out_ (l.chunk_bytes), as libhdf5's filter would; timed apart.
absl::Status Hdf5ReplayReader::Decode(const Layout& l, const ChunkRef& c, const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  bool ok = false;
  if (l.filter == Filter::kDeflate && z_ok_ && inflateReset(&z_) == Z_OK) {
    z_.next_in = chunk_in_.data();
    z_.avail_in = static_cast<uInt>(c.size);
    z_.next_out = chunk_out_.data();
    z_.avail_out = static_cast<uInt>(l.chunk_bytes);
    ok = inflate(&z_, Z_FINISH) == Z_STREAM_END && z_.total_out == l.chunk_bytes;
  } else if (l.filter == Filter::kLzf) {
    ok = LzfDecompress()(chunk_in_.data(), static_cast<unsigned>(c.size), chunk_out_.data(),
                         static_cast<unsigned>(l.chunk_bytes)) == l.chunk_bytes;
  } else if (l.filter == Filter::kSzip && c.size > 4) {
    // libhdf5's szip filter: the decoded size (4 bytes, little-endian), then libaec's stream.
    SzParams p{static_cast<int>(l.szip[H5Z_SZIP_PARM_MASK]), static_cast<int>(l.szip[H5Z_SZIP_PARM_BPP]),
               static_cast<int>(l.szip[H5Z_SZIP_PARM_PPB]), static_cast<int>(l.szip[H5Z_SZIP_PARM_PPS])};
    size_t n = static_cast<size_t>(l.chunk_bytes);
    ok = SzDecompress()(chunk_out_.data(), &n, chunk_in_.data() + 4, static_cast<size_t>(c.size - 4), &p) == 0 &&
         n == l.chunk_bytes;
  }
  counters_.decode_ns += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  if (ok) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(path, ": chunk at ", c.addr, " (", c.size, " bytes) does not decompress to ",
                                          l.chunk_bytes, " bytes"));
}

}  // namespace

std::unique_ptr<SampleReader> NewHdf5ReplayReader(int64_t datasets, StorageTarget target) {
  return std::make_unique<Hdf5ReplayReader>(datasets, std::move(target));
}

void SetPlanLimit(SampleReader& reader, size_t bytes) {
  if (auto* r = dynamic_cast<Hdf5ReplayReader*>(&reader); r != nullptr) r->set_plan_limit(bytes);
}

ReplayCounters ReplayCountersOf(const SampleReader& reader) {
  const auto* r = dynamic_cast<const Hdf5ReplayReader*>(&reader);
  return r == nullptr ? ReplayCounters{} : r->counters();
}

absl::StatusOr<Hdf5StorageAccess*> DriverOf(SampleReader& reader) {
  if (auto* r = dynamic_cast<Hdf5ReplayReader*>(&reader); r != nullptr) return r->Driver();
  if (auto* r = dynamic_cast<Hdf5LibReader*>(&reader); r != nullptr) return r->Access();
  return absl::InvalidArgumentError("not an hdf5 sample reader");
}

}  // namespace dlio::hdf5_internal
