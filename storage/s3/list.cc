// S3Client's listings of every page (List, ListLevel) over ListPage (client.cc, which holds the request machinery).
// Apart from client.cc only to keep each file within the size limit; the contract is storage/s3/client.h's.
#include <string>
#include <utility>

#include "storage/s3/client.h"

namespace dlio {

absl::StatusOr<S3Listing> S3Client::ListLevel(absl::string_view prefix, absl::string_view delimiter) {
  S3Listing all;
  std::string token;
  do {
    absl::StatusOr<S3ListPage> p = ListPage(prefix, token, delimiter);
    if (!p.ok()) return p.status();
    for (S3Object& o : p->objects) all.objects.push_back(std::move(o));
    for (std::string& c : p->common_prefixes) all.common_prefixes.push_back(std::move(c));
    token = std::move(p->next_token);
  } while (!token.empty());
  return all;
}

absl::StatusOr<std::vector<S3Object>> S3Client::List(absl::string_view prefix) {
  absl::StatusOr<S3Listing> all = ListLevel(prefix, "");
  if (!all.ok()) return all.status();
  return std::move(all->objects);
}

}  // namespace dlio
