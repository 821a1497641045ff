#include "storage/hdf5_vfd.h"

#include <H5FDpublic.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace dlio {

// libhdf5 sees a File as its H5FD_t (the public part must come first) and keeps the end-of-address we are told.
struct Hdf5StorageAccess::File {
  H5FD_t pub;
  Hdf5StorageAccess* access;
  haddr_t eoa;
};

namespace {

// What libhdf5 copies into the file access property list: which access object opens the files.
struct Info {
  Hdf5StorageAccess* access;
};

using File = Hdf5StorageAccess::File;

H5FD_t* Open(const char* name, unsigned flags, hid_t fapl, haddr_t /*maxaddr*/) {
  const auto* info = static_cast<const Info*>(H5Pget_driver_info(fapl));
  if (info == nullptr || info->access == nullptr) return nullptr;
  if ((flags & (H5F_ACC_RDWR | H5F_ACC_CREAT | H5F_ACC_TRUNC)) != 0) {
    info->access->Fail(absl::FailedPreconditionError(absl::StrCat(name, ": the dlio_storage HDF5 driver is read-only")));
    return nullptr;
  }
  File* f = info->access->OpenFile(name);
  return f == nullptr ? nullptr : &f->pub;
}

Hdf5StorageAccess* AccessOf(const H5FD_t* file) { return reinterpret_cast<const File*>(file)->access; }

herr_t Close(H5FD_t* file) {
  AccessOf(file)->CloseFile();
  return 0;
}

// libhdf5 asks with a null file when it queries the driver class: the files' flags then.
herr_t Query(const H5FD_t* file, unsigned long* flags) {
  *flags = file == nullptr ? Hdf5StorageAccess::kFileFeatures : AccessOf(file)->features();
  return 0;
}

haddr_t GetEoa(const H5FD_t* file, H5FD_mem_t) { return reinterpret_cast<const File*>(file)->eoa; }
herr_t SetEoa(H5FD_t* file, H5FD_mem_t, haddr_t addr) {
  reinterpret_cast<File*>(file)->eoa = addr;
  return 0;
}
haddr_t GetEof(const H5FD_t* file, H5FD_mem_t) { return AccessOf(file)->size(); }

herr_t Read(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, void* buf) {
  return AccessOf(file)->ReadAt(addr, size, buf) ? 0 : -1;
}

herr_t Write(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t, size_t, const void*) {
  AccessOf(file)->Fail(absl::FailedPreconditionError("the dlio_storage HDF5 driver is read-only"));
  return -1;
}

herr_t Truncate(H5FD_t*, hid_t, hbool_t) { return 0; }  // read-only: nothing to truncate

const H5FD_class_t kClass = [] {
  H5FD_class_t c;
  std::memset(&c, 0, sizeof c);
  c.name = "dlio_storage";
  c.maxaddr = static_cast<haddr_t>(INT64_MAX);  // offsets are off_t
  c.fc_degree = H5F_CLOSE_WEAK;
  c.fapl_size = sizeof(Info);  // libhdf5 copies the Info itself
  c.open = Open;
  c.close = Close;
  c.query = Query;
  c.get_eoa = GetEoa;
  c.set_eoa = SetEoa;
  c.get_eof = GetEof;
  c.read = Read;
  c.write = Write;
  c.truncate = Truncate;
  for (int t = 0; t < H5FD_MEM_NTYPES; ++t) c.fl_map[t] = H5FD_MEM_DEFAULT;  // one address space, as sec2
  return c;
}();

hid_t DriverId() {
  static hid_t id = -1;
  static std::once_flag once;
  std::call_once(once, [] { id = H5FDregister(&kClass); });
  return id;
}

}  // namespace

Hdf5StorageAccess::Hdf5StorageAccess(std::unique_ptr<StorageReader> reader)
    : reader_(std::move(reader)), file_(std::make_unique<File>()), keep_head_(reader_->engine() == IoEngine::kS3) {
  head_key_.reserve(256);
}

unsigned long Hdf5StorageAccess::features() const { return keep_head_ ? 0 : kFileFeatures; }

absl::StatusOr<std::unique_ptr<Hdf5StorageAccess>> Hdf5StorageAccess::New(std::unique_ptr<StorageReader> reader) {
  if (reader == nullptr || reader->alignment() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dlio_ext.io_engine: ", reader ? IoEngineName(reader->engine()) : "?",
        " cannot serve libhdf5's reads (they are not aligned); use posix, io_uring or mmap"));
  }
  std::unique_ptr<Hdf5StorageAccess> a(new Hdf5StorageAccess(std::move(reader)));
  const hid_t driver = DriverId();
  if (driver < 0) return absl::InternalError("hdf5: cannot register the dlio_storage virtual file driver");
  a->fapl_ = H5Pcreate(H5P_FILE_ACCESS);
  const Info info{a.get()};
  if (a->fapl_ < 0 || H5Pset_driver(a->fapl_, driver, &info) < 0) {
    return absl::InternalError("hdf5: cannot set the dlio_storage driver on a file access property list");
  }
  return a;
}

Hdf5StorageAccess::~Hdf5StorageAccess() {
  if (fapl_ >= 0) H5Pclose(fapl_);
}

void Hdf5StorageAccess::Fail(const absl::Status& s) {
  last_error_ = s;
  H5Epush2(H5E_DEFAULT, __FILE__, "dlio_storage", __LINE__, H5E_ERR_CLS, H5E_VFL, H5E_READERROR, "%s",
           std::string(s.message()).c_str());
}

Hdf5StorageAccess::File* Hdf5StorageAccess::OpenFile(const char* name) {
  if (open_) {
    Fail(absl::FailedPreconditionError(absl::StrCat(name, ": the dlio_storage HDF5 driver holds one open file, and '",
                                                    reader_->path(), "' is still open")));
    return nullptr;
  }
  if (stats_ == nullptr) {
    Fail(absl::FailedPreconditionError(absl::StrCat(name, ": dlio_storage driver used before set_stats()")));
    return nullptr;
  }
  name_.assign(name);  // into the kept string: no allocation per open once it is long enough
  if (asked_ != nullptr) asked_->push_back({Hdf5Io::Kind::kOpen, 0, 0});
  if (issued_ != nullptr) issued_->push_back({Hdf5Io::Kind::kOpen, 0, 0});
  if (absl::Status s = reader_->Open(name_, &size_, *stats_); !s.ok()) {
    Fail(s);
    return nullptr;
  }
  if (absl::Status s = KeepHead(); !s.ok()) {
    reader_->Close();
    Fail(s);
    return nullptr;
  }
  std::memset(file_.get(), 0, sizeof(File));
  file_->access = this;
  open_ = true;
  return file_.get();
}

void Hdf5StorageAccess::CloseFile() {
  if (asked_ != nullptr) asked_->push_back({Hdf5Io::Kind::kClose, 0, 0});
  if (issued_ != nullptr) issued_->push_back({Hdf5Io::Kind::kClose, 0, 0});
  last_eoa_ = file_->eoa;
  reader_->Close();
  open_ = false;
}

absl::Status Hdf5StorageAccess::Open(const std::string& path) {
  clear_error();
  if (OpenFile(path.c_str()) != nullptr) return absl::OkStatus();
  // A failed open keeps its error here (Fail), without libhdf5's error stack being involved beyond Fail's push.
  H5Eclear2(H5E_DEFAULT);
  return last_error_;
}

absl::Status Hdf5StorageAccess::Read(uint64_t addr, size_t size, void* buf) {
  if (ReadAt(addr, size, buf)) return absl::OkStatus();
  H5Eclear2(H5E_DEFAULT);
  return last_error_;
}

absl::Status Hdf5StorageAccess::KeepHead() {
  if (!keep_head_ || (head_valid_ && name_ == head_key_)) return absl::OkStatus();
  head_valid_ = false;
  ReadRequest r;
  r.len = static_cast<size_t>(std::min<uint64_t>(size_, kHeadBytes));
  head_.Reserve(std::max<size_t>(r.len, 1));
  r.buf = head_.data();
  if (r.len > 0) {
    if (issued_ != nullptr) issued_->push_back({Hdf5Io::Kind::kRead, 0, r.len});
    if (absl::Status s = reader_->Read(&r, 1, *stats_); !s.ok()) return s;
  }
  head_len_ = r.got;
  head_key_.assign(name_);
  head_valid_ = true;
  return absl::OkStatus();
}

bool Hdf5StorageAccess::ReadAt(uint64_t addr, size_t size, void* buf) {
  if (probe_) {  // a libhdf5 query that needs a read it has not made: no I/O (see the contract)
    Fail(absl::FailedPreconditionError(absl::StrCat(name_, ": HDF5 read at ", addr, " while probing (no I/O)")));
    return false;
  }
  if (asked_ != nullptr) asked_->push_back({Hdf5Io::Kind::kRead, addr, size});
  const bool ok = ReadAtUnlogged(addr, size, buf);
  if (ok && asked_bytes_ != nullptr) {
    asked_bytes_->insert(asked_bytes_->end(), static_cast<uint8_t*>(buf), static_cast<uint8_t*>(buf) + size);
  }
  return ok;
}

bool Hdf5StorageAccess::ReadAtUnlogged(uint64_t addr, size_t size, void* buf) {
  // libhdf5 may read past the end of the file (a speculative superblock read): those bytes are zeros, as in sec2.
  const size_t avail = addr >= size_ ? 0 : static_cast<size_t>(std::min<uint64_t>(size, size_ - addr));
  if (avail < size) std::memset(static_cast<uint8_t*>(buf) + avail, 0, size - avail);
  if (avail == 0) return true;
  if (keep_head_ && addr + avail <= head_len_) {  // inside the kept head of the object (KeepHead): no I/O
    std::memcpy(buf, head_.data() + addr, avail);
    return true;
  }
  ReadRequest r;
  r.buf = static_cast<uint8_t*>(buf);
  r.len = avail;
  r.off = addr;
  if (issued_ != nullptr) issued_->push_back({Hdf5Io::Kind::kRead, addr, avail});
  if (absl::Status s = reader_->Read(&r, 1, *stats_); !s.ok()) {
    Fail(s);
    return false;
  }
  if (r.got < avail) {  // the file shrank since it was opened: sec2 zero-fills too
    std::memset(static_cast<uint8_t*>(buf) + r.got, 0, avail - r.got);
  }
  return true;
}

}  // namespace dlio
