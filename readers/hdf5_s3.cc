#include "readers/hdf5_s3.h"

#include <H5FDpublic.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace dlio {
namespace {

struct Info {
  Hdf5S3Access* access;
};

struct File {
  H5FD_t pub;  // must come first: libhdf5 sees a File as an H5FD_t
  Hdf5S3Access* access;
  haddr_t eoa;
  haddr_t eof;
};

// Pushes an error onto libhdf5's stack so the caller's H5Fopen/H5Dread fails with our message.
herr_t Fail(Hdf5S3Access* a, const absl::Status& s) {
  if (a != nullptr) a->set_last_error(std::string(s.message()));
  H5Epush2(H5E_DEFAULT, __FILE__, "dlio_s3", __LINE__, H5E_ERR_CLS, H5E_VFL, H5E_READERROR, "%s",
           std::string(s.message()).c_str());
  return -1;
}

H5FD_t* Open(const char* name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
  const auto* info = static_cast<const Info*>(H5Pget_driver_info(fapl));
  if (info == nullptr || info->access == nullptr) return nullptr;
  if ((flags & H5F_ACC_RDWR) != 0 || (flags & H5F_ACC_CREAT) != 0) {
    Fail(info->access, absl::FailedPreconditionError("the dlio_s3 HDF5 driver is read-only"));
    return nullptr;
  }
  uint64_t size = 0;
  if (absl::Status s = info->access->OpenKey(name, &size); !s.ok()) {
    Fail(info->access, s);
    return nullptr;
  }
  auto* f = static_cast<File*>(std::calloc(1, sizeof(File)));  // libhdf5 owns the H5FD_t part: plain memory
  if (f == nullptr) return nullptr;
  f->access = info->access;
  f->eof = size;
  f->eoa = 0;
  (void)maxaddr;
  return &f->pub;
}

herr_t Close(H5FD_t* file) {
  std::free(file);
  return 0;
}

herr_t Query(const H5FD_t*, unsigned long* flags) {
  *flags = 0;  // no aggregation flags: the file is never written
  return 0;
}

haddr_t GetEoa(const H5FD_t* file, H5FD_mem_t) { return reinterpret_cast<const File*>(file)->eoa; }
herr_t SetEoa(H5FD_t* file, H5FD_mem_t, haddr_t addr) {
  reinterpret_cast<File*>(file)->eoa = addr;
  return 0;
}
haddr_t GetEof(const H5FD_t* file, H5FD_mem_t) { return reinterpret_cast<const File*>(file)->eof; }

herr_t Read(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, void* buf) {
  File* f = reinterpret_cast<File*>(file);
  // libhdf5 may read past the end of the object (e.g. a speculative superblock read): those bytes are zeros.
  const size_t avail = addr >= f->eof ? 0 : static_cast<size_t>(std::min<haddr_t>(size, f->eof - addr));
  if (avail < size) std::memset(static_cast<uint8_t*>(buf) + avail, 0, size - avail);
  if (avail == 0) return 0;
  if (absl::Status s = f->access->ReadAt(addr, avail, buf); !s.ok()) return Fail(f->access, s);
  return 0;
}

herr_t Write(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t, size_t, const void*) {
  return Fail(reinterpret_cast<File*>(file)->access,
              absl::FailedPreconditionError("the dlio_s3 HDF5 driver is read-only"));
}

herr_t Truncate(H5FD_t*, hid_t, hbool_t) { return 0; }

const H5FD_class_t kClass = [] {
  H5FD_class_t c;
  std::memset(&c, 0, sizeof c);
  c.name = "dlio_s3";
  c.maxaddr = static_cast<haddr_t>(INT64_MAX);
  c.fc_degree = H5F_CLOSE_WEAK;
  c.fapl_size = sizeof(Info);  // libhdf5 copies the Info struct itself
  c.open = Open;
  c.close = Close;
  c.query = Query;
  c.get_eoa = GetEoa;
  c.set_eoa = SetEoa;
  c.get_eof = GetEof;
  c.read = Read;
  c.write = Write;
  c.truncate = Truncate;
  for (int t = 0; t < H5FD_MEM_NTYPES; ++t) c.fl_map[t] = H5FD_MEM_DEFAULT;  // one address space
  return c;
}();

hid_t DriverId() {
  static hid_t id = -1;
  static std::once_flag once;
  std::call_once(once, [] { id = H5FDregister(&kClass); });
  return id;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Hdf5S3Access>> Hdf5S3Access::New(std::shared_ptr<const S3Config> config) {
  std::unique_ptr<Hdf5S3Access> a(new Hdf5S3Access(std::move(config)));
  const hid_t driver = DriverId();
  if (driver < 0) return absl::InternalError("hdf5: cannot register the dlio_s3 virtual file driver");
  a->fapl_ = H5Pcreate(H5P_FILE_ACCESS);
  Info info{a.get()};
  if (a->fapl_ < 0 || H5Pset_driver(a->fapl_, driver, &info) < 0) {
    return absl::InternalError("hdf5: cannot set the dlio_s3 driver on a file access property list");
  }
  return a;
}

Hdf5S3Access::~Hdf5S3Access() {
  if (fapl_ >= 0) H5Pclose(fapl_);
}

absl::Status Hdf5S3Access::OpenKey(absl::string_view key, uint64_t* size) {
  if (valid_ && key == key_) {
    *size = size_;
    return absl::OkStatus();
  }
  valid_ = false;
  absl::StatusOr<uint64_t> s = client_.Head(key);
  if (!s.ok()) return s.status();
  size_ = *s;
  head_len_ = static_cast<size_t>(std::min<uint64_t>(size_, kHeadBytes));
  head_.Reserve(std::max<size_t>(head_len_, 1));
  if (head_len_ > 0) {
    absl::StatusOr<size_t> got = client_.GetRange(key, 0, head_len_, head_.data());
    if (!got.ok()) return got.status();
    head_len_ = *got;
  }
  key_.assign(key.data(), key.size());
  valid_ = true;
  *size = size_;
  return absl::OkStatus();
}

absl::Status Hdf5S3Access::ReadAt(uint64_t off, size_t len, void* dst) {
  if (off + len <= head_len_) {
    std::memcpy(dst, head_.data() + off, len);
    return absl::OkStatus();
  }
  absl::StatusOr<size_t> got = client_.GetRange(key_, off, len, static_cast<uint8_t*>(dst));
  if (!got.ok()) return got.status();
  if (*got < len) {
    return absl::DataLossError(absl::StrCat("s3 ", client_.config().Describe(), " object '", key_, "': ", len,
                                            " bytes asked at offset ", off, ", ", *got, " received"));
  }
  return absl::OkStatus();
}

}  // namespace dlio
