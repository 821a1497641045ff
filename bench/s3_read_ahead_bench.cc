// dlio-bench-s3-read-ahead: the S3 read-ahead alone (storage/s3/read_ahead.h, no loader, no format reader), one
// thread keeping IN_FLIGHT whole-object GETs going, to compare with the reference client's one thread over a libcurl
// multi handle (`dlio-bench-s3-ref get BUCKET KEYFILE 1 PASSES IN_FLIGHT`) on the same objects: what the read-ahead
// itself costs, apart from what the agent does with the bytes (issue 27 item 2's 2 MiB gap).
//
//   dlio-bench-s3-read-ahead ENVFILE BUCKET KEYFILE PASSES IN_FLIGHT [COPY [BATCH [DEPTH]]]
//
// COPY 1: after each GET the thread copies the object's bytes to a buffer of its own, as a reader thread works on
// each answer before it asks for the next (the transfers in flight must go on meanwhile); 0 (default): nothing.
// BATCH b > 0: the key source gives the keys of the batch being read and of the DEPTH batches after it only (b keys
// each; DEPTH default 1: the next batch only, as the loader's key source did before it offered the prefetch depth,
// agent/loader.cc IndexKeySource; the loader now gives ceil(prefetch_size / read_threads) when its queue is empty);
// 0 (default): any key ahead.
// ENVFILE: scripts/ceph-rgw.sh's env file (AWS_* lines). KEYFILE: one object key per line (the objects exist).
// Prints one JSON line {"bytes": B, "seconds": S, "requests": N, ...}, as the reference does (S: first GET to last
// answer), and the read-ahead's in-flight counter (read_ahead.h): "in_flight_mean", "in_flight_max", "short_gets".
// Exit 1 on a failed GET, 2 on bad usage.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "storage/s3/client.h"
#include "storage/s3/read_ahead.h"
#include "storage/storage.h"

namespace {

class RoundSource : public dlio::S3KeySource {
 public:
  RoundSource(const std::vector<std::string>& keys, size_t total, size_t batch, size_t depth, const size_t* taken)
      : keys_(keys), left_(total), batch_(batch), depth_(depth), taken_(taken) {}
  const std::string* Next() override {
    if (left_ == 0) return nullptr;
    if (batch_ > 0 && next_ >= (*taken_ / batch_ + 1 + depth_) * batch_) return nullptr;  // beyond DEPTH batches
    --left_;
    return &keys_[next_++ % keys_.size()];
  }

 private:
  const std::vector<std::string>& keys_;
  size_t next_ = 0, left_;
  const size_t batch_, depth_;
  const size_t* taken_;  // objects the thread has taken so far
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6 || argc > 9) {
    std::fprintf(stderr,
                 "usage: dlio-bench-s3-read-ahead ENVFILE BUCKET KEYFILE PASSES IN_FLIGHT [COPY [BATCH [DEPTH]]]\n");
    return 2;
  }
  auto c = std::make_shared<dlio::S3Config>();
  std::ifstream env(argv[1]);
  for (std::string line; std::getline(env, line);) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "AWS_ENDPOINT_URL") c->endpoint = v;
    if (k == "AWS_ACCESS_KEY_ID") c->access_key_id = v;
    if (k == "AWS_SECRET_ACCESS_KEY") c->secret_access_key = dlio::S3Secret(v);
    if (k == "AWS_REGION") c->region = v;
  }
  c->bucket = argv[2];
  c->requests_in_flight = std::atoi(argv[5]);
  std::vector<std::string> keys;
  std::ifstream kf(argv[3]);
  for (std::string line; std::getline(kf, line);) {
    if (!line.empty()) keys.push_back(line);
  }
  const size_t total = keys.size() * static_cast<size_t>(std::atoi(argv[4]));
  if (c->endpoint.empty() || keys.empty() || total == 0 || c->requests_in_flight < 1) {
    std::fprintf(stderr, "dlio-bench-s3-read-ahead: no endpoint in %s, no keys in %s, or PASSES/IN_FLIGHT < 1\n",
                 argv[1], argv[3]);
    return 2;
  }
  dlio::S3Client client(c);
  dlio::S3ReadAhead ra(client);
  const size_t batch = argc >= 8 ? static_cast<size_t>(std::atoi(argv[7])) : 0;
  const size_t depth = argc == 9 ? static_cast<size_t>(std::max(1, std::atoi(argv[8]))) : 1;
  size_t taken = 0;
  RoundSource source(keys, total, batch, depth, &taken);
  dlio::AlignedBuffer buf;
  const bool copy = argc >= 7 && std::atoi(argv[6]) != 0;
  std::vector<uint8_t> work;  // COPY: the thread's own copy of each object
  uint64_t bytes = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < total; ++i) {
    uint64_t ns = 0;
    absl::StatusOr<uint64_t> got = ra.Get(keys[i % keys.size()], source, buf, &ns);
    if (!got.ok()) {
      std::fprintf(stderr, "dlio-bench-s3-read-ahead: %s\n", std::string(got.status().message()).c_str());
      return 1;
    }
    bytes += *got;
    ++taken;
    if (copy) {
      work.resize(*got);
      std::memcpy(work.data(), buf.data(), *got);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const dlio::S3ReadAhead::InFlight f = ra.in_flight();
  std::printf("{\"bytes\": %llu, \"seconds\": %.6f, \"requests\": %zu, \"in_flight_mean\": %.2f, "
              "\"in_flight_max\": %zu, \"short_gets\": %llu}\n",
              static_cast<unsigned long long>(bytes), secs, total, f.mean, f.high_water,
              static_cast<unsigned long long>(f.short_gets));
  return 0;
}
