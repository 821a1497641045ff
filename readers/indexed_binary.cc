#include "readers/indexed_binary.h"

#include <sys/mman.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "readers/dtype.h"
#include "storage/io_util.h"
#include "storage/open.h"
#include "storage/storage.h"

namespace dlio {
namespace {

std::string OffPath(const std::string& data) { return data + ".off.idx"; }
std::string SizePath(const std::string& data) { return data + ".sz.idx"; }

// The two index files of one data file, loaded once and kept while the reader stays on that file.
class IndexCache {
 public:
  // Loads the index of `path` unless it is the one already loaded, through `storage` (posix files or s3 objects).
  // Errors name the index file.
  absl::Status Load(const std::string& path, StorageReader& storage, IoStats& stats) {
    if (path == path_) return absl::OkStatus();
    path_.clear();
    // The index names in reused strings: no allocation per load once they fit (a shuffled order reloads often).
    off_path_.assign(path).append(".off.idx");
    sz_path_.assign(path).append(".sz.idx");
    absl::StatusOr<uint64_t> off = storage.ReadFile(off_path_, off_, internal::kWholeFileReadChunk, stats);
    if (!off.ok()) return off.status();
    absl::StatusOr<uint64_t> sz = storage.ReadFile(sz_path_, sz_, internal::kWholeFileReadChunk, stats);
    if (!sz.ok()) return sz.status();
    if (*off % 8 != 0 || *sz != *off) {
      return absl::DataLossError(absl::StrCat(path, ": index files disagree (", *off, " bytes of offsets, ", *sz,
                                              " bytes of sizes; 8 bytes per sample in each)"));
    }
    entries_ = *off / 8;
    path_ = path;
    return absl::OkStatus();
  }
  uint64_t entries() const { return entries_; }
  uint64_t offset(uint64_t i) const { return Le64(off_.data() + 8 * i); }
  uint64_t size(uint64_t i) const { return Le64(sz_.data() + 8 * i); }
  void Forget() { path_.clear(); }

 private:
  static uint64_t Le64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);  // little-endian host
    return v;
  }
  std::string path_;  // whose index is loaded ("" = none)
  std::string off_path_, sz_path_;
  AlignedBuffer off_, sz_;  // grow only
  uint64_t entries_ = 0;
};

absl::Status CheckEntry(const std::string& path, uint32_t sample, const IndexCache& idx, uint64_t file_size) {
  if (sample >= idx.entries()) {
    return absl::OutOfRangeError(absl::StrCat(path, ": sample ", sample, " requested, index has ", idx.entries()));
  }
  const uint64_t off = idx.offset(sample), size = idx.size(sample);
  if (off > file_size || size > file_size - off) {
    return absl::DataLossError(absl::StrCat(path, ": index entry ", sample, " (offset ", off, ", size ", size,
                                            ") runs past the end of the ", file_size, "-byte file"));
  }
  return absl::OkStatus();
}

// Per sample: open the data file (posix: open + fstat, as DLIO's reader opens it; s3: a HEAD, remembered while the
// reader stays on one object) and one read of exactly the sample (pread, or a ranged GET).
class IndexedSampleReader final : public SampleReader {
 public:
  explicit IndexedSampleReader(StorageTarget target) : target_(std::move(target)) {}
  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats) override {
    last_bytes_ = 0;
    if (!storage_) {
      absl::StatusOr<std::unique_ptr<StorageReader>> s = NewStorageReader(target_);
      if (!s.ok()) return s.status();
      storage_ = std::move(*s);
    }
    if (absl::Status s = index_.Load(path, *storage_, stats); !s.ok()) return s;
    uint64_t file_size = 0;
    if (absl::Status s = storage_->Open(path, &file_size, stats); !s.ok()) return s;
    if (absl::Status s = CheckEntry(path, sample, index_, file_size); !s.ok()) return s;
    const uint64_t off = index_.offset(sample), size = index_.size(sample);
    buf_.Reserve(std::max<uint64_t>(size, 1));  // grows only
    ReadRequest req;  // one request; the engine re-issues the rest of a short read itself
    req.buf = buf_.data();
    req.len = static_cast<size_t>(size);
    req.off = off;
    absl::Status read = storage_->Read(&req, 1, stats);
    storage_->Close();
    if (!read.ok()) return read;
    if (req.got < size) return absl::DataLossError(absl::StrCat(path, ": file ended inside sample ", sample));
    last_bytes_ = size;
    stats.AddSamples(1);
    return size;
  }

  std::string_view last_sample() const override {
    return {reinterpret_cast<const char*>(buf_.data()), static_cast<size_t>(last_bytes_)};
  }

 private:
  const StorageTarget target_;
  std::unique_ptr<StorageReader> storage_;  // made on first use
  IndexCache index_;
  AlignedBuffer buf_;  // one sample, page-aligned (the kernel's copy is fastest into it); never shrinks
  uint64_t last_bytes_ = 0;
};

class MmapSampleReader final : public SampleReader {
 public:
  explicit MmapSampleReader(std::shared_ptr<const ConfinedDir> dir) : dir_(std::move(dir)) {}
  MmapSampleReader(const MmapSampleReader&) = delete;
  MmapSampleReader& operator=(const MmapSampleReader&) = delete;
  ~MmapSampleReader() override { Unmap(); }

  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats) override {
    last_ = {};
    if (path != mapped_path_) {
      Unmap();
      index_.Forget();
      if (!storage_) {
        absl::StatusOr<std::unique_ptr<StorageReader>> s = StorageReader::New(IoEngine::kPosix, dir_);
        if (!s.ok()) return s.status();
        storage_ = std::move(*s);
      }
      if (absl::Status s = index_.Load(path, *storage_, stats); !s.ok()) return s;
      internal::Fd fd(internal::OpenFile(dir_.get(), path, O_RDONLY));
      if (!fd.valid()) return internal::ErrnoError(path, "open", errno);
      stats.AddFile();
      struct stat st;
      if (::fstat(fd.get(), &st) != 0) return internal::ErrnoError(path, "stat", errno);
      size_ = static_cast<uint64_t>(st.st_size);
      if (size_ > 0) {
        void* m = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd.get(), 0);
        if (m == MAP_FAILED) return internal::ErrnoError(path, "mmap", errno);
        map_ = static_cast<const uint8_t*>(m);
      }
      mapped_path_ = path;  // the mapping outlives the descriptor
    }
    if (absl::Status s = CheckEntry(path, sample, index_, size_); !s.ok()) return s;
    const uint64_t off = index_.offset(sample), size = index_.size(sample);
    const uint64_t t0 = internal::NowNs();
    internal::TouchPages(map_ + off, size);  // the page faults are the reads
    stats.AddOp(size, internal::NowNs() - t0);
    last_ = {reinterpret_cast<const char*>(map_ + off), static_cast<size_t>(size)};
    stats.AddSamples(1);
    return size;
  }

  std::string_view last_sample() const override { return last_; }

 private:
  void Unmap() {
    if (map_ != nullptr) ::munmap(const_cast<uint8_t*>(map_), size_);
    map_ = nullptr;
    size_ = 0;
    mapped_path_.clear();
  }
  const std::shared_ptr<const ConfinedDir> dir_;  // FormatOptions::dir
  std::unique_ptr<StorageReader> storage_;  // the index files (posix)
  IndexCache index_;
  std::string mapped_path_;
  const uint8_t* map_ = nullptr;
  uint64_t size_ = 0;
  std::string_view last_;
};

class IndexedBinaryFormat final : public Format {
 public:
  IndexedBinaryFormat(FormatOptions o, bool mmap) : Format(std::move(o)), mmap_(mmap) {}
  const char* name() const override { return mmap_ ? "mmap_indexed_binary" : "indexed_binary"; }
  const char* extension() const override { return name(); }
  std::unique_ptr<SampleReader> NewSampleReader() const override {
    if (mmap_) return std::make_unique<MmapSampleReader>(options_.dir);
    return std::make_unique<IndexedSampleReader>(options_.target());
  }
  std::vector<std::string> CompanionPaths(const std::string& data_path) const override {
    return {OffPath(data_path), SizePath(data_path)};
  }

  absl::Status Generate(const std::string& path, uint64_t seed, IoStats& stats) const override {
    const internal::DType& t = *internal::FindDType(options_.element_type);
    uint64_t elems = 1;
    for (int64_t d : options_.sample_dims) elems *= static_cast<uint64_t>(d);
    const uint64_t sample_bytes = elems * t.itemsize;
    const uint64_t nspf = static_cast<uint64_t>(options_.samples_per_file);
    std::vector<uint8_t> sample(sample_bytes);
    std::vector<uint64_t> offsets(nspf), sizes(nspf, sample_bytes);
    internal::Rng rng(seed);
    internal::FileWriter w(NewWriteSink(options_.target()));
    absl::Status st = w.Open(path);
    for (uint64_t i = 0; st.ok() && i < nspf; ++i) {
      offsets[i] = i * sample_bytes;
      internal::FillRandom(t, rng, sample.data(), elems);
      st = w.Append(sample.data(), sample.size(), stats);
    }
    if (st.ok()) st = w.Finish(stats);
    // The index files: uint64 little-endian (the host's order on x86-64 and aarch64).
    for (const auto& [p, v] : {std::pair{OffPath(path), &offsets}, std::pair{SizePath(path), &sizes}}) {
      if (!st.ok()) break;
      internal::FileWriter iw(NewWriteSink(options_.target()));
      st = iw.Open(p);
      if (st.ok()) st = iw.Append(v->data(), v->size() * 8, stats);
      if (st.ok()) st = iw.Finish(stats);
    }
    if (st.ok()) stats.AddSamples(nspf);
    return st;
  }

 private:
  const bool mmap_;
};

}  // namespace

std::unique_ptr<Format> NewIndexedBinaryFormat(const FormatOptions& options) {
  return std::make_unique<IndexedBinaryFormat>(options, false);
}
std::unique_ptr<Format> NewMmapIndexedBinaryFormat(const FormatOptions& options) {
  return std::make_unique<IndexedBinaryFormat>(options, true);
}

}  // namespace dlio
