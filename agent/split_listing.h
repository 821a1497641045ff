// A split's files listed once for the whole job (issue 27 item 3): the kList phase on one agent, the compact form
// it answers with (job/phase.h SplitListing), and the names every agent builds from it without listing.
// - CompactListing: ListDataFiles' names as the compact form: a pattern when they are exactly DLIO's derived names
//   of their count (CompactNames), else the names relative to the split's folder or key prefix, '\n'-joined and
//   zstd-compressed. Names that compress to more than kMaxListingNamesBytes are not shared (names_zstd empty,
//   `shared` false): every agent then lists the split itself, as before.
// - ListingNames: the DataFileNames of a listing under this agent's own location (its data folder path, the
//   bucket's key prefix): the pattern derived, or the names decompressed; a listing that does not fit the job (its
//   split, count or compressed names) is an error naming the key.
// - RunListPhase: the kList phase (PhaseOrder::list_split): lists the split (ListDataFiles: paged ListObjectsV2 on
//   a bucket, one readdir per folder on files), times it, counts its LIST requests (or folders read), and answers
//   one result per local rank, the listing on the first. A short or empty listing is ListDataFiles' error, with
//   the agent, rank, job and phase in front.
// - SharedListingOf: the listing an order carries for its split, if any.
// Thread-safety: pure functions (the phase reads the folder or the bucket only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/data_file_names.h"
#include "agent/dataset_files.h"
#include "job/phase.h"
#include "results/results.h"

namespace dlio {

struct PhaseContext;

// Compressed names above this are not shared: with the order's other fields a RunPhase stays under gRPC's 4 MiB
// default receive limit, and a PhaseDone part under the coordinator's (proto/dlio/v1/convert.h).
inline constexpr size_t kMaxListingNamesBytes = size_t{3} << 20;

// The compact form of `names` (ListDataFiles' full paths or keys of `split` under `where`); split, count and the
// pattern's fields are set, the cost fields are left to the caller.
absl::StatusOr<SplitListing> CompactListing(const std::vector<std::string>& names, const DatasetLocation& where,
                                            const std::string& split, const std::string& ext, int64_t subfolders,
                                            const std::string& prefix);

// True when `l` carries names every agent can build (a pattern, or names compressed), false for a listing too large
// to share.
inline bool Shareable(const SplitListing& l) { return !l.split.empty() && (l.pattern || !l.names_zstd.empty()); }

// The names of listing `l` under `where`; `count` is the job's count of the split (`count_key` names it).
absl::StatusOr<DataFileNames> ListingNames(const SplitListing& l, const DatasetLocation& where, int64_t count,
                                           const std::string& count_key);

// The listing `cmd` carries for `split` ("train" or "valid"), or null.
const SplitListing* SharedListingOf(const PhaseOrder& cmd, const std::string& split);

// The kList phase; see above.
absl::StatusOr<std::vector<RankEpochResult>> RunListPhase(const PhaseContext& ctx);

}  // namespace dlio
