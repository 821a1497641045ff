#include "readers/synthetic.h"

#include <string_view>

#include "storage/io_util.h"
#include "storage/open.h"

namespace dlio {
namespace {

// "img_007_of_100.synthetic" (or a temporary name made from it) -> "7".
std::string IndexText(const std::string& path) {
  std::string_view name(path);
  if (size_t slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  const size_t of = name.rfind("_of_");
  if (of == std::string_view::npos) return "0";
  const size_t us = name.rfind('_', of == 0 ? 0 : of - 1);
  std::string_view digits = name.substr(us == std::string_view::npos ? 0 : us + 1, of - (us == std::string_view::npos ? 0 : us + 1));
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) return "0";
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  return std::string(digits);
}

class SyntheticSampleReader final : public SampleReader {
 public:
  absl::StatusOr<uint64_t> ReadSample(const std::string&, uint32_t, IoStats& stats) override {
    stats.AddSamples(1);
    return uint64_t{0};
  }
  std::string_view last_sample() const override { return {}; }
};

class SyntheticFormat final : public Format {
 public:
  explicit SyntheticFormat(FormatOptions o) : Format(std::move(o)) {}
  const char* name() const override { return "synthetic"; }
  const char* extension() const override { return "synthetic"; }
  std::unique_ptr<SampleReader> NewSampleReader() const override {
    return std::make_unique<SyntheticSampleReader>();
  }
  absl::Status Generate(const std::string& path, uint64_t, IoStats& stats) const override {
    const std::string text = IndexText(path);
    internal::FileWriter w(NewWriteSink(options_.target()));
    absl::Status st = w.Open(path);
    if (st.ok()) st = w.Append(text.data(), text.size(), stats);
    if (st.ok()) st = w.Finish(stats);
    if (st.ok()) stats.AddSamples(static_cast<uint64_t>(options_.samples_per_file));
    return st;
  }
};

}  // namespace

std::unique_ptr<Format> NewSyntheticFormat(const FormatOptions& options) {
  return std::make_unique<SyntheticFormat>(options);
}

}  // namespace dlio
