#include "agent/split_listing.h"

#include <zstd.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/phase_context.h"
#include "readers/format.h"
#include "results/s3_stats.h"
#include "storage/s3/client.h"

namespace dlio {
namespace {

// Where the split's names start: "<folder>/<split>/" or "<key prefix>/<split>/" (S3Join's form).
std::string SplitHead(const DatasetLocation& where, const std::string& split) {
  return where.s3 ? S3Join(where.prefix, split) + "/" : absl::StrCat(where.folder->path(), "/", split, "/");
}

// Level 3, zstd's default: 200,000 generated names (~8 MB of text) compress to well under 1 MB in ~20 ms.
constexpr int kZstdLevel = 3;

}  // namespace

absl::StatusOr<SplitListing> CompactListing(const std::vector<std::string>& names, const DatasetLocation& where,
                                            const std::string& split, const std::string& ext, int64_t subfolders,
                                            const std::string& prefix) {
  SplitListing l;
  l.split = split;
  l.count = static_cast<int64_t>(names.size());
  const DataFileNames compact = CompactNames(names, where, split, ext, subfolders, prefix);
  if (compact.derived()) {
    l.pattern = true;
    l.file_prefix = prefix;
    l.subfolders = subfolders;
    l.ext = ext;
    return l;
  }
  const std::string head = SplitHead(where, split);
  std::string text;
  for (const std::string& n : names) {
    if (n.compare(0, head.size(), head) != 0) {
      return absl::InternalError(absl::StrCat("listing of ", split, ": '", n, "' is not under '", head, "'"));
    }
    if (!text.empty()) text.push_back('\n');
    text.append(n, head.size(), std::string::npos);
  }
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), kZstdLevel);
  if (ZSTD_isError(n)) {
    return absl::InternalError(absl::StrCat("listing of ", split, ": zstd: ", ZSTD_getErrorName(n)));
  }
  out.resize(n);
  if (out.size() <= kMaxListingNamesBytes) l.names_zstd = std::move(out);  // else not shared: see the header
  return l;
}

absl::StatusOr<DataFileNames> ListingNames(const SplitListing& l, const DatasetLocation& where, int64_t count,
                                           const std::string& count_key) {
  if (l.count != count) {
    return absl::FailedPreconditionError(absl::StrCat(count_key, ": the job's listing of ", l.split, " by agent '",
                                                      l.agent, "' has ", l.count, " names, the job ", count));
  }
  if (count == 0) return DataFileNames();
  if (l.pattern) {
    return where.s3 ? DataFileNames::Derived(where.prefix, true, l.split, l.file_prefix, count, l.subfolders, l.ext)
                    : DataFileNames::Derived(where.folder->path(), false, l.split, l.file_prefix, count, l.subfolders,
                                             l.ext);
  }
  const unsigned long long size = ZSTD_getFrameContentSize(l.names_zstd.data(), l.names_zstd.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > (uint64_t{1} << 34)) {
    return absl::InvalidArgumentError(absl::StrCat(count_key, ": the job's listing of ", l.split, " by agent '",
                                                   l.agent, "' is not a zstd frame of names"));
  }
  std::string text(static_cast<size_t>(size), '\0');
  const size_t n = ZSTD_decompress(text.data(), text.size(), l.names_zstd.data(), l.names_zstd.size());
  if (ZSTD_isError(n) || n != text.size()) {
    return absl::InvalidArgumentError(absl::StrCat(count_key, ": the job's listing of ", l.split, " by agent '",
                                                   l.agent, "' does not decompress: ",
                                                   ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short"));
  }
  const std::string head = SplitHead(where, l.split);
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(count));
  for (absl::string_view rel : absl::StrSplit(text, '\n')) names.push_back(absl::StrCat(head, rel));
  if (static_cast<int64_t>(names.size()) != count || (count == 0 && !text.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(count_key, ": the job's listing of ", l.split, " by agent '",
                                                   l.agent, "' holds ", names.size(), " names for its count ",
                                                   count));
  }
  return DataFileNames(std::move(names));
}

const SplitListing* SharedListingOf(const PhaseOrder& cmd, const std::string& split) {
  return cmd.listing.split == split && Shareable(cmd.listing) ? &cmd.listing : nullptr;
}

absl::StatusOr<std::vector<RankEpochResult>> RunListPhase(const PhaseContext& ctx) {
  const PhaseCommand& cmd = ctx.cmd;
  const WorkloadSpec& spec = cmd.spec;
  const std::string& split = cmd.list_split;
  const std::string where_text = ctx.Where(cmd.first_rank);
  if (split != "train" && split != "valid") {
    return absl::InvalidArgumentError(absl::StrCat(where_text, ": list_split '", split,
                                                   "' is not a split; allowed: train, valid"));
  }
  const bool eval = split == "valid";
  const int64_t count = eval ? spec.num_files_eval : spec.num_files_train;
  const char* key = eval ? "dataset.num_files_eval" : "dataset.num_files_train";
  absl::StatusOr<std::shared_ptr<const S3Config>> s3 = ctx.s3();
  if (!s3.ok()) return s3.status();
  absl::StatusOr<std::unique_ptr<Format>> format = MakeFormat(spec.format, FormatOptionsFor(spec, nullptr, split, *s3));
  if (!format.ok()) return Annotate(format.status(), where_text);
  std::shared_ptr<const ConfinedDir> dir;
  if (!*s3) {
    absl::StatusOr<std::shared_ptr<const ConfinedDir>> d =
        ctx.root.ok() ? (*ctx.root)->Sub(spec.data_folder, ConfinedDir::Mode::kExisting, "dataset.data_folder")
                      : absl::StatusOr<std::shared_ptr<const ConfinedDir>>(ctx.root.status());
    if (!d.ok()) {
      return Annotate(absl::Status(d.status().code(), absl::StrCat(d.status().message(), " (generate the dataset "
                                                                   "with workflow.generate_data: true)")),
                      where_text);
    }
    dir = std::move(*d);
  }
  const DatasetLocation where = *s3 ? DatasetLocation::Bucket(*s3, spec.S3DataPrefix()) : DatasetLocation::Folder(*dir);
  const S3Snapshot before = *s3 ? S3Metrics::Global().Snapshot() : S3Snapshot();
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t start_us = phase_clock::NowUnixUs();
  // As the step phases say it (agent/steps_phase.cc): without a shared data folder an agent finds only its share.
  const std::string hint =
      !*s3 && cmd.world > cmd.local_ranks
          ? "; with several agents every agent must see the whole dataset: give them one shared data folder (a "
            "parallel file system or NFS mounted below each --data-root), see docs/fleet.md"
          : "";
  std::string ignored;
  uint64_t folders = 0;
  absl::StatusOr<std::vector<std::string>> names = ListDataFiles(where, split, (*format)->extension(), count, key,
                                                                 hint, spec.file_prefix, &ignored, &folders);
  if (!names.ok()) return Annotate(names.status(), where_text);
  absl::StatusOr<SplitListing> l =
      CompactListing(*names, where, split, (*format)->extension(),
                     eval ? spec.num_subfolders_eval : spec.num_subfolders_train, spec.file_prefix);
  if (!l.ok()) return Annotate(l.status(), where_text);
  l->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const size_t list_op = static_cast<size_t>(S3Op::kList);
  l->requests = *s3 ? S3Difference(S3Metrics::Global().Snapshot(), before).ops[list_op].requests : folders;
  l->note = std::move(ignored);
  l->agent = ctx.agent;
  std::vector<RankEpochResult> out(static_cast<size_t>(cmd.local_ranks));
  for (int i = 0; i < cmd.local_ranks; ++i) {
    RankEpochResult& r = out[static_cast<size_t>(i)];
    r.rank = cmd.first_rank + i;
    r.epoch = 0;
    r.start_unix_us = start_us;
    r.end_unix_us = phase_clock::NowUnixUs();
  }
  if (!out.empty()) out[0].listing = std::move(*l);
  return out;
}

}  // namespace dlio
