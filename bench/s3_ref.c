/* dlio-bench-s3-ref: the reference S3 client of bench/s3_bench.py. Plain C over libcurl (the agent's library, same
 * SigV4 signing with CURLOPT_AWS_SIGV4 and the same x-amz-content-sha256 header), one easy handle per thread so its
 * connection is kept alive, path-style URLs, no retries, no parsing: the fastest the same requests can go.
 *
 *   dlio-bench-s3-ref mkbucket BUCKET
 *   dlio-bench-s3-ref get BUCKET KEYFILE THREADS PASSES [INFLIGHT]
 *                                                         GETs every key of KEYFILE (one per line) PASSES times;
 *                                                         thread t takes keys t, t+THREADS, ... into its own buffer;
 *                                                         with INFLIGHT > 1 each thread keeps that many GETs in
 *                                                         flight over one libcurl multi handle (one easy handle,
 *                                                         connection and buffer per slot; the agent's
 *                                                         dlio_ext.s3_requests_in_flight from one thread)
 *   dlio-bench-s3-ref put BUCKET PREFIX COUNT SIZE THREADS PUTs COUNT objects PREFIX/obj-<i> of SIZE random bytes
 *                                                         (threads t, t+THREADS, ...: THREADS PUTs in flight);
 *                                                         a PREFIX with one %zu (%07zu) is the whole key, printf'd with i
 *                                                         (e.g. m/train/img_%07zu_of_1000000.npz: DLIO's names),
 *                                                         and SIZE @FILE makes every object a copy of FILE (the
 *                                                         million-object bench's fast generation, bench/s3_million.py)
 *
 * Endpoint and credentials: AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION (us-east-1).
 * Prints one JSON line {"bytes": B, "seconds": S, "requests": N} (S from the first request to the last answer).
 * Exit 1 on any failed request (its status on stderr), 2 on bad usage. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char* g_endpoint;
static char g_userpwd[512];
static char g_sigv4[128];
static const char* g_bucket;

typedef struct {
  int id, threads, passes, inflight;
  char** keys;
  size_t nkeys;
  const char* prefix;
  size_t count, size;
  unsigned char* buf; /* GET: receive buffer (grows); PUT: the body */
  size_t cap, got, sent;
  uint64_t bytes, requests;
  int failed;
} Worker;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t on_write(char* data, size_t size, size_t n, void* user) {
  Worker* w = (Worker*)user;
  size_t len = size * n;
  if (w->got + len > w->cap) {
    size_t cap = w->cap ? w->cap : 1 << 20;
    while (cap < w->got + len) cap *= 2;
    w->buf = realloc(w->buf, cap);
    w->cap = cap;
  }
  memcpy(w->buf + w->got, data, len);
  w->got += len;
  return len;
}

static size_t on_read(char* dst, size_t size, size_t n, void* user) {
  Worker* w = (Worker*)user;
  size_t k = size * n;
  if (k > w->size - w->sent) k = w->size - w->sent;
  memcpy(dst, w->buf + w->sent, k);
  w->sent += k;
  return k;
}

static CURL* new_handle(struct curl_slist* headers) {
  CURL* h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_AWS_SIGV4, g_sigv4);
  curl_easy_setopt(h, CURLOPT_USERPWD, g_userpwd);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  return h;
}

static int check(CURL* h, CURLcode rc, const char* url) {
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  if (rc != CURLE_OK || status < 200 || status >= 300) {
    fprintf(stderr, "dlio-bench-s3-ref: %s: %s, HTTP %ld\n", url, curl_easy_strerror(rc), status);
    return 1;
  }
  return 0;
}

static void* get_worker(void* arg) {
  Worker* w = (Worker*)arg;
  struct curl_slist* headers = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  CURL* h = new_handle(headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
  char url[2048];
  for (int p = 0; p < w->passes && !w->failed; ++p) {
    for (size_t i = (size_t)w->id; i < w->nkeys && !w->failed; i += (size_t)w->threads) {
      snprintf(url, sizeof url, "%s/%s/%s", g_endpoint, g_bucket, w->keys[i]);
      curl_easy_setopt(h, CURLOPT_URL, url);
      w->got = 0;
      w->failed = check(h, curl_easy_perform(h), url);
      w->bytes += w->got;
      ++w->requests;
    }
  }
  curl_easy_cleanup(h);
  curl_slist_free_all(headers);
  return NULL;
}

/* INFLIGHT > 1: slot j of the thread's multi handle reads into w[j] (its own buffer); a finished slot takes the
 * thread's next key at once. */
static void* get_multi_worker(void* arg) {
  Worker* w = (Worker*)arg;
  const int n = w->inflight;
  struct curl_slist* headers = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  CURLM* m = curl_multi_init();
  curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)n);
  CURL** h = calloc((size_t)n, sizeof *h);
  Worker* slot = calloc((size_t)n, sizeof *slot);
  char (*url)[2048] = calloc((size_t)n, sizeof *url);
  size_t next = (size_t)w->id, total = w->nkeys * (size_t)w->passes;
  int active = 0;
  for (int j = 0; j < n; ++j) {
    h[j] = new_handle(headers);
    curl_easy_setopt(h[j], CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h[j], CURLOPT_WRITEDATA, &slot[j]);
    curl_easy_setopt(h[j], CURLOPT_PRIVATE, (char*)(intptr_t)j);
  }
  for (int j = 0; j < n && next < total; ++j, next += (size_t)w->threads) {
    snprintf(url[j], sizeof url[j], "%s/%s/%s", g_endpoint, g_bucket, w->keys[next % w->nkeys]);
    curl_easy_setopt(h[j], CURLOPT_URL, url[j]);
    curl_multi_add_handle(m, h[j]);
    ++active;
  }
  while (active > 0 && !w->failed) {
    int running = 0, left = 0;
    curl_multi_perform(m, &running);
    CURLMsg* msg;
    while ((msg = curl_multi_info_read(m, &left)) != NULL) {
      if (msg->msg != CURLMSG_DONE) continue;
      char* p = NULL;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &p);
      const int j = (int)(intptr_t)p;
      const CURLcode rc = msg->data.result;
      curl_multi_remove_handle(m, h[j]);
      --active;
      w->failed |= check(h[j], rc, url[j]);
      w->bytes += slot[j].got;
      ++w->requests;
      slot[j].got = 0;
      if (next < total && !w->failed) {
        snprintf(url[j], sizeof url[j], "%s/%s/%s", g_endpoint, g_bucket, w->keys[next % w->nkeys]);
        next += (size_t)w->threads;
        curl_easy_setopt(h[j], CURLOPT_URL, url[j]);
        curl_multi_add_handle(m, h[j]);
        ++active;
      }
    }
    if (active > 0) curl_multi_poll(m, NULL, 0, 100, NULL);
  }
  for (int j = 0; j < n; ++j) {
    curl_multi_remove_handle(m, h[j]);
    curl_easy_cleanup(h[j]);
    free(slot[j].buf);
  }
  curl_multi_cleanup(m);
  curl_slist_free_all(headers);
  free(h);
  free(slot);
  free(url);
  return NULL;
}

static void* put_worker(void* arg) {
  Worker* w = (Worker*)arg;
  struct curl_slist* headers = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  CURL* h = new_handle(headers);
  curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
  curl_easy_setopt(h, CURLOPT_READDATA, w);
  curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)w->size);
  char url[2048];
  for (size_t i = (size_t)w->id; i < w->count && !w->failed; i += (size_t)w->threads) {
    if (strchr(w->prefix, '%') != NULL) { /* the whole key, printf'd with i (main checked it has one %zu) */
      char key[1024];
      snprintf(key, sizeof key, w->prefix, i);
      snprintf(url, sizeof url, "%s/%s/%s", g_endpoint, g_bucket, key);
    } else {
      snprintf(url, sizeof url, "%s/%s/%s/obj-%zu", g_endpoint, g_bucket, w->prefix, i);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    w->sent = 0;
    w->failed = check(h, curl_easy_perform(h), url);
    w->bytes += w->size;
    ++w->requests;
  }
  curl_easy_cleanup(h);
  curl_slist_free_all(headers);
  return NULL;
}

static int usage(void) {
  fprintf(stderr,
          "usage: dlio-bench-s3-ref mkbucket BUCKET | get BUCKET KEYFILE THREADS PASSES [INFLIGHT] | "
          "put BUCKET PREFIX COUNT SIZE|@FILE THREADS\n");
  return 2;
}

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  g_endpoint = getenv("AWS_ENDPOINT_URL");
  const char* key = getenv("AWS_ACCESS_KEY_ID");
  const char* secret = getenv("AWS_SECRET_ACCESS_KEY");
  const char* region = getenv("AWS_REGION");
  if (!g_endpoint || !key || !secret) {
    fprintf(stderr, "dlio-bench-s3-ref: AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are needed\n");
    return 2;
  }
  snprintf(g_userpwd, sizeof g_userpwd, "%s:%s", key, secret);
  snprintf(g_sigv4, sizeof g_sigv4, "aws:amz:%s:s3", region && *region ? region : "us-east-1");
  g_bucket = argv[2];
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (strcmp(argv[1], "mkbucket") == 0) {
    struct curl_slist* headers = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    CURL* h = new_handle(headers);
    char url[1024];
    snprintf(url, sizeof url, "%s/%s", g_endpoint, g_bucket);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    Worker sink = {0};
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    curl_slist_free_all(headers);
    free(sink.buf);
    if (rc != CURLE_OK || (status != 200 && status != 409)) {
      fprintf(stderr, "dlio-bench-s3-ref: create bucket %s: %s, HTTP %ld\n", g_bucket, curl_easy_strerror(rc), status);
      return 1;
    }
    return 0;
  }
  int get = strcmp(argv[1], "get") == 0;
  if (!get && strcmp(argv[1], "put") != 0) return usage();
  if ((get && argc != 6 && argc != 7) || (!get && argc != 7)) return usage();
  const int inflight = get && argc == 7 ? atoi(argv[6]) : 1;
  if (inflight < 1) return usage();
  int threads = atoi(get ? argv[4] : argv[6]);
  if (threads < 1) return usage();
  char** keys = NULL;
  size_t nkeys = 0;
  unsigned char* body = NULL; /* put ... @FILE: every object's bytes */
  size_t body_size = 0;
  if (!get) {
    /* At most one conversion, %zu with an optional zero-padded width (%07zu). */
    const char* pct = strchr(argv[3], '%');
    const char* conv = pct != NULL ? pct + 1 + strspn(pct + 1, "0123456789") : NULL;
    if (pct != NULL && (strncmp(conv, "zu", 2) != 0 || strchr(conv, '%') != NULL)) return usage();
  }
  if (!get && argv[5][0] == '@') {
    FILE* f = fopen(argv[5] + 1, "rb");
    if (!f) return usage();
    fseek(f, 0, SEEK_END);
    body_size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    body = malloc(body_size ? body_size : 1);
    if (fread(body, 1, body_size, f) != body_size) return usage();
    fclose(f);
  }
  if (get) {
    FILE* f = fopen(argv[3], "r");
    if (!f) return usage();
    char line[1024];
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\r\n")] = 0;
      if (!*line) continue;
      keys = realloc(keys, (nkeys + 1) * sizeof *keys);
      keys[nkeys++] = strdup(line);
    }
    fclose(f);
  }
  Worker* w = calloc((size_t)threads, sizeof *w);
  pthread_t* tid = calloc((size_t)threads, sizeof *tid);
  for (int t = 0; t < threads; ++t) {
    w[t].id = t;
    w[t].threads = threads;
    if (get) {
      w[t].keys = keys;
      w[t].nkeys = nkeys;
      w[t].passes = atoi(argv[5]);
      w[t].inflight = inflight;
    } else {
      w[t].prefix = argv[3];
      w[t].count = (size_t)strtoull(argv[4], NULL, 10);
      w[t].size = body != NULL ? body_size : (size_t)strtoull(argv[5], NULL, 10);
      w[t].buf = malloc(w[t].size ? w[t].size : 1);
      if (body != NULL) {
        memcpy(w[t].buf, body, body_size);
      } else {
        for (size_t i = 0; i < w[t].size; ++i) w[t].buf[i] = (unsigned char)(rand() >> 7);
      }
    }
  }
  double t0 = now();
  for (int t = 0; t < threads; ++t) pthread_create(&tid[t], NULL, !get ? put_worker : inflight > 1 ? get_multi_worker : get_worker, &w[t]);
  uint64_t bytes = 0, requests = 0;
  int failed = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(tid[t], NULL);
    bytes += w[t].bytes;
    requests += w[t].requests;
    failed |= w[t].failed;
    free(w[t].buf);
  }
  double secs = now() - t0;
  printf("{\"bytes\": %llu, \"seconds\": %.6f, \"requests\": %llu}\n", (unsigned long long)bytes, secs,
         (unsigned long long)requests);
  for (size_t i = 0; i < nkeys; ++i) free(keys[i]);
  free(keys);
  free(body);
  free(w);
  free(tid);
  curl_global_cleanup();
  return failed ? 1 : 0;
}
