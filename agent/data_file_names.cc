#include "agent/data_file_names.h"

#include "absl/strings/str_cat.h"

namespace dlio {
namespace {

size_t DigitsOf(int64_t v) {
  size_t n = 1;
  for (; v >= 10; v /= 10) ++n;
  return n;
}

// Appends `v` (>= 0) zero-padded to `width` digits, as readers/format.cc's Padded, without a temporary string.
void AppendPadded(std::string* out, int64_t v, size_t width) {
  char digits[24];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0);
  if (width > n) out->append(width - n, '0');
  while (n > 0) out->push_back(digits[--n]);
}

}  // namespace

DataFileNames DataFileNames::Derived(const std::string& base, bool object_keys, const std::string& split,
                                     const std::string& prefix, int64_t count, int64_t subfolders,
                                     const std::string& ext) {
  DataFileNames n;
  n.derived_ = true;
  n.count_ = count;
  n.subfolders_ = subfolders;
  n.digits_ = DigitsOf(count);
  n.sub_digits_ = DigitsOf(subfolders);
  if (object_keys) {  // S3Join(prefix, rel): the prefix without its trailing '/', nothing when empty
    std::string p = base;
    while (!p.empty() && p.back() == '/') p.pop_back();
    n.head_ = p.empty() ? absl::StrCat(split, "/") : absl::StrCat(p, "/", split, "/");
  } else {
    n.head_ = absl::StrCat(base, "/", split, "/");
  }
  n.stem_ = absl::StrCat(prefix, "_");
  n.tail_ = absl::StrCat("_of_", count, ".", ext);
  return n;
}

const std::string& DataFileNames::Name(int64_t i, std::string* buf) const {
  if (!derived_) return held_[static_cast<size_t>(i)];
  buf->clear();
  buf->append(head_);
  if (subfolders_ > 1) {
    AppendPadded(buf, i % subfolders_, sub_digits_);
    buf->push_back('/');
  }
  buf->append(stem_);
  AppendPadded(buf, i, digits_);
  buf->append(tail_);
  return *buf;
}

std::string DataFileNames::operator[](size_t i) const {
  std::string buf;
  return Name(static_cast<int64_t>(i), &buf);
}

std::vector<std::string> DataFileNames::All() const {
  if (!derived_) return held_;
  std::vector<std::string> out;
  out.reserve(size());
  for (size_t i = 0; i < size(); ++i) out.push_back((*this)[i]);
  return out;
}

size_t DataFileNames::HeapBytes() const {
  size_t bytes = held_.capacity() * sizeof(std::string);
  // A string's heap block, when its text does not fit the object itself (libstdc++'s small-string buffer).
  const auto heap = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
  for (const std::string& s : held_) bytes += heap(s);
  return bytes + heap(head_) + heap(stem_) + heap(tail_);
}

}  // namespace dlio
