#include "report/report.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "results/results.h"
#include "results/verdict.h"
#include "job/workload_spec.h"
#include "nlohmann/json.hpp"
#include "report/page_common.h"
#include "report/scenario_page.h"

namespace dlio {

// Generated at build time from node_modules/chart.js/dist/chart.umd.js (empty when it was missing).
extern const char* const kChartJs;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using report_internal::DataElement;  // report/page_common.h: shared with the scenario page
using report_internal::HtmlEscape;
using report_internal::PageScript;

absl::StatusOr<json> ReadJson(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot read"));
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not JSON: ", e.what()));
  }
}

double Num(const json& j, const char* key, double fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

// A figure as it is in the file: the number, or null when it is missing or not measured.
json Fig(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? *it : json(nullptr);
}

// A rank's training figure of one epoch from its <rank>_output.json entry: the step-weighted mean over the
// "blockN" entries (evaluation has its own "eval" entry and stays out), blocks not measured (null) left out, as
// results/results.cc ComputeRankEpoch does. Null when no block is measured.
json RankEpochFigure(const json& epoch, const char* key) {
  const json figures = epoch.value(key, json::object());
  const json proc = epoch.value("proc", json::object());
  double sum = 0, weight = 0;
  for (const auto& [block, v] : figures.items()) {
    if (block.rfind("block", 0) != 0 || !v.is_number()) continue;
    const double steps = proc.contains(block) && proc[block].is_array() ? static_cast<double>(proc[block].size()) : 1;
    sum += v.get<double>() * steps;
    weight += steps;
  }
  return weight > 0 ? json(sum / weight) : json(nullptr);
}

// The job's normalised workload (job.yaml), or an error naming the file.
absl::StatusOr<WorkloadSpec> LoadJobYaml(const fs::path& dir) {
  std::ifstream in(dir / "job.yaml");
  if (!in) return absl::NotFoundError(absl::StrCat((dir / "job.yaml").string(), ": cannot read"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return LoadWorkload(ss.str(), {}, (dir / "job.yaml").string());
}

// The bandwidth the job's accelerators demand at 100 % AU (client/explain.h's figure), in bytes/s; null without
// compute time.
json DemandJson(const WorkloadSpec& spec, int accelerators) {
  const double compute = spec.computation_time.Mean();
  if (!(compute > 0)) return nullptr;
  const double per_accelerator = static_cast<double>(spec.batch_size) * spec.record_length_bytes / compute;
  return {{"bytes_per_second_per_accelerator", per_accelerator},
          {"bytes_per_second_fleet", per_accelerator * std::max(1, accelerators)}};
}

json RankTables(const fs::path& dir, const json& summary) {
  const json ext = summary.value("dlio_ext", json::object());
  const json agents = ext.value("agents", json::array());
  const int world = ext.value("world_size", summary.value("num_accelerators", 0));
  json ranks = json::array();
  for (int rank = 0; rank < world; ++rank) {
    json r = {{"rank", rank}, {"agent", ""}, {"node", ""}};
    for (const json& a : agents) {
      const int first = a.value("first_rank", 0), n = a.value("ranks", 0);
      if (rank >= first && rank < first + n) {
        r["agent"] = a.value("name", "");
        r["node"] = a.value("hostname", "");
      }
    }
    json rank_epochs = json::array();
    absl::StatusOr<json> out = ReadJson(dir / absl::StrCat(rank, "_output.json"));
    if (out.ok()) {
      for (const auto& [key, e] : out->items()) {
        if (!e.is_object() || !e.contains("au") || key.empty() || !std::isdigit(static_cast<unsigned char>(key[0]))) {
          continue;
        }
        const json io = e.value("dlio_ext", json::object()).value("io", json::object());
        const json lat = e.value("dlio_ext", json::object()).value("read_latency_seconds", json::object());
        rank_epochs.push_back({{"epoch", std::stoi(key)},
                               {"au", RankEpochFigure(e, "au")},
                               {"samples_per_second", RankEpochFigure(e, "throughput")},
                               {"read_bytes", Num(io, "bytes")},
                               {"p50", lat.value("p50", json())},
                               {"p99", lat.value("p99", json())}});
      }
    }
    std::sort(rank_epochs.begin(), rank_epochs.end(),
              [](const json& a, const json& b) { return a["epoch"].get<int>() < b["epoch"].get<int>(); });
    r["epochs"] = rank_epochs;
    ranks.push_back(r);
  }
  return ranks;
}

// CDF points (x = bucket upper bound in seconds, y = fraction of reads at or below it); the open last bucket has
// no finite bound and is left out (its share shows as the curve not reaching 1).
json LatencyCdf(const json& ext) {
  json cdf = json::array();
  const json hist = ext.value("train_read_latency_histogram", json::object());
  const json bounds = hist.value("upper_bounds_seconds", json::array());
  const json counts = hist.value("counts", json::array());
  double total = 0;
  for (const json& c : counts) total += c.get<double>();
  double seen = 0;
  for (size_t i = 0; i < counts.size() && i < bounds.size(); ++i) {
    seen += counts[i].get<double>();
    if (bounds[i].is_number() && total > 0) cdf.push_back({{"x", bounds[i]}, {"y", seen / total}});
  }
  return cdf;
}

// Everything the page needs from one result folder, as the JSON the page script reads.
absl::StatusOr<json> LoadJob(const fs::path& dir, const std::string& tag) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return absl::NotFoundError(absl::StrCat(dir.string(), ": not a result folder"));
  absl::StatusOr<json> summary = ReadJson(dir / "summary.json");
  if (!summary.ok()) return summary.status();
  const json& s = *summary;
  const json ext = s.value("dlio_ext", json::object());
  const json metric = s.value("metric", json::object());

  json job = {{"kind", "job"}, {"tag", tag}, {"dir", dir.string()}};
  job["job_id"] = ext.value("job_id", dir.filename().string());
  job["num_hosts"] = s.value("num_hosts", 0);
  job["num_accelerators"] = s.value("num_accelerators", 0);
  job["start"] = s.value("start", "");
  job["end"] = s.value("end", "");
  job["model"] = "";
  job["format"] = "";
  job["au_target"] = nullptr;
  job["demand"] = nullptr;
  job["config"] = json::object();
  if (absl::StatusOr<WorkloadSpec> spec = LoadJobYaml(dir); spec.ok()) {
    job["model"] = spec->model_name;
    job["format"] = spec->format;
    job["au_target"] = spec->au_threshold * 100;
    job["demand"] = DemandJson(*spec, s.value("num_accelerators", 1));
    job["config"] = FlattenWorkload(*spec);
  }
  const Verdict verdict = VerdictFromJson(ext.value("verdict", json()));
  job["verdict"] = {{"status", VerdictStatusName(verdict.status)},
                    {"line", VerdictLine(verdict)},
                    {"limit", LimitLine(verdict)}};
  job["summary"] = {{"au_mean_percentage", Fig(metric, "train_au_mean_percentage")},
                    {"au_stdev_percentage", Fig(metric, "train_au_stdev_percentage")},
                    {"throughput_mean_samples_per_second", Fig(metric, "train_throughput_mean_samples_per_second")},
                    {"io_mean_MB_per_second", Fig(metric, "train_io_mean_MB_per_second")},
                    {"io_actual_mean_MB_per_second", Fig(metric, "train_io_actual_mean_MB_per_second")},
                    {"read_bytes", Num(metric, "train_read_bytes")},
                    {"au_meet_expectation", metric.value("train_au_meet_expectation", "")}};
  json epochs = json::array();
  for (const json& e : ext.value("train_epochs", json::array())) {
    epochs.push_back({{"epoch", e.value("epoch", 0)},
                      {"au", Fig(e, "au_percentage")},
                      {"au_min_rank", Fig(e, "au_min_rank_percentage")},
                      {"samples_per_second", Fig(e, "throughput_samples_per_second")},
                      {"mib_per_second", Fig(e, "io_MiB_per_second")},
                      {"actual_mb_per_second", Fig(e, "io_actual_MB_per_second")}});
  }
  job["epochs"] = epochs;
  // Evaluation: one entry per evaluation, DLIO's lists.
  json evals = json::array();
  const json eau = metric.value("eval_au_percentage", json::array());
  const json etp = metric.value("eval_throughput_samples_per_second", json::array());
  for (size_t i = 0; i < eau.size(); ++i) {
    evals.push_back({{"n", i + 1}, {"au", eau[i]}, {"samples_per_second", i < etp.size() ? etp[i] : json()}});
  }
  job["eval"] = evals;
  job["checkpoints"] = ext.value("checkpoints", json::array());
  job["environment"] = ext.value("provenance", json::object());
  job["environment"].erase("job_yaml");  // the configuration section shows it key by key
  job["latency"] = ext.value("train_read_latency_seconds", json::object());
  job["cdf"] = LatencyCdf(ext);
  job["ranks"] = RankTables(dir, s);
  return job;
}

// An --mlperf set: <dir>/<type>/<model>/mlperf_result_<set>.json and the run folders it names (runs[].dir, relative
// to it). `dir` may be the file, its folder, or any root above it: the newest set found is taken (by its name, which
// holds the set's datetime).
absl::StatusOr<json> LoadMlperf(const fs::path& dir) {
  auto is_result = [](const fs::path& p) {
    const std::string n = p.filename().string();
    return absl::StartsWith(n, "mlperf_result") && absl::EndsWith(n, ".json");
  };
  std::error_code ec;
  fs::path file;
  if (fs::is_regular_file(dir, ec) && is_result(dir)) {
    file = dir;
  } else {
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (is_result(it->path()) && (file.empty() || it->path().filename() > file.filename())) file = it->path();
    }
  }
  if (file.empty()) {
    return absl::NotFoundError(absl::StrCat(dir.string(), ": neither summary.json (a job's result folder) nor ",
                                            "mlperf_result_<set>.json (an --mlperf result) found"));
  }
  const fs::path root = file.parent_path();
  absl::StatusOr<json> result = ReadJson(file);
  if (!result.ok()) return result.status();
  json m = {{"kind", "mlperf"}, {"tag", "mlperf"}, {"dir", root.string()}, {"result", *result}};
  json runs = json::array();
  for (const json& r : result->value("runs", json::array())) {
    json run = r;
    const fs::path run_dir = root / r.value("dir", r.value("run", ""));
    if (fs::exists(run_dir / "summary.json", ec)) {
      absl::StatusOr<json> job = LoadJob(run_dir, r.value("run", ""));
      if (job.ok()) run["job"] = *job;
    }
    runs.push_back(run);
  }
  m["runs"] = runs;
  m["job_id"] = absl::StrCat("MLPerf ", result->value("model", ""), " ", result->value("run_datetime", ""));
  return m;
}

// A ramp folder (client/ramp.h): ramp.json beside one result folder per point; the points' figures come from
// ramp.json, the environment from the first point's folder.
absl::StatusOr<json> LoadRamp(const fs::path& dir) {
  absl::StatusOr<json> ramp = ReadJson(dir / "ramp.json");
  if (!ramp.ok()) return ramp.status();
  if (!ramp->contains("points") || !(*ramp)["points"].is_array() || (*ramp)["points"].empty()) {
    return absl::InvalidArgumentError(absl::StrCat((dir / "ramp.json").string(), ": no points"));
  }
  json m = {{"kind", "ramp"}, {"ramp", *ramp}};
  m["job_id"] = absl::StrCat("ramp over ", ramp->value("axis", ""), " (", dir.filename().string(), ")");
  const fs::path first = dir / (*ramp)["points"][0].value("folder", "");
  std::error_code ec;
  if (fs::exists(first / "summary.json", ec)) {
    absl::StatusOr<json> job = LoadJob(first, "job");
    if (job.ok()) m["job"] = *job;
  }
  return m;
}

// The page script: builds the sections and draws the charts (animation off, so they are complete at load).
constexpr const char* kPageScript = R"js(
  const jobs = JSON.parse(document.getElementById('dlio-data').textContent);
  const colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#8c564b', '#e377c2'];
  const fmt = (v, d) => isNum(v) ? Number(v).toFixed(d) : 'n/m';
  const ms = v => isNum(v) ? v * 1e3 : null;
  const verdictBox = (text, status) => {
    const cls = status === 'PASS' || status === 'CLOSED' ? 'pass' : status === 'FAIL' || status === 'INVALID' ? 'fail' : 'other';
    return el('p', text, 'verdict ' + cls);
  };

  if (jobs[0].kind === 'ramp') {
    // A ramp: one job per point; the curve of AU and samples/s against the points, the target and the knee.
    const r = jobs[0].ramp, pts = r.points, knee = r.knee;
    main.appendChild(verdictBox(isNum(knee) ? 'knee: ' + knee + ' ' + r.axis + ' (the last point with AU >= ' +
                                fmt(r.au_target_percentage, 1) + ' %)' : 'knee: none (no point kept AU >= ' +
                                fmt(r.au_target_percentage, 1) + ' %)', isNum(knee) ? 'PASS' : 'FAIL'));
    const box = section('Points');
    box.appendChild(table('ramp', [r.axis, 'job', 'AU (%)', 'samples/s', 'MB/s', 'batch wait (% of step)',
                                   'batch wait p99 (ms)', 'limit', 'verdict'],
      pts.map(p => [p.n + (p.n === knee ? ' (knee)' : ''), p.job_id, fmt(p.au_percentage, 2),
                    fmt(p.samples_per_second, 2), fmt(p.mb_per_second, 2),
                    fmt(isNum(p.batch_wait_share) ? 100 * p.batch_wait_share : null, 1),
                    fmt(ms(p.batch_wait_p99_seconds), 1), p.limit || '-', p.verdict])));
    // --find-max-accelerators's probes (client/ramp.h FindMaxRampJson): triangles on the AU curve, in trial order.
    const probes = Array.isArray(r.probes) ? r.probes : [];
    if (probes.length) {
      box.appendChild(el('p', 'find-max-accelerators probes, in order: ' + probes.join(', ') + '; maximum: ' +
                              r.find_max, 'probes'));
    }
    const charts = el('div', undefined, 'charts'); main.appendChild(charts);
    const labels = pts.map(p => String(p.n));
    const radius = pts.map(p => p.n === knee ? 9 : 3);
    new Chart(canvas(charts, 'chart-ramp'), {
      type: 'line',
      data: { labels, datasets: [
        { label: 'AU %', data: pts.map(p => p.au_percentage), borderColor: colors[0], yAxisID: 'au',
          pointRadius: radius, pointStyle: pts.map(p => p.n === knee ? 'star' : 'circle') },
        { label: 'target', data: pts.map(() => r.au_target_percentage), borderColor: colors[1], borderDash: [6, 4],
          pointRadius: 0, yAxisID: 'au' },
        { label: 'samples/s', data: pts.map(p => p.samples_per_second), borderColor: colors[2], yAxisID: 'sps',
          pointRadius: radius }].concat(probes.length ? [
        { label: 'find-max probes (max ' + r.find_max + ')', showLine: false, yAxisID: 'au', pointStyle: 'triangle',
          pointRadius: 7, borderColor: colors[3], backgroundColor: colors[3],
          data: probes.map(n => ({ x: String(n), y: (pts.find(p => p.n === n) || {}).au_percentage })) }] : []) },
      options: { plugins: { title: { display: true, text: 'Ramp over ' + r.axis + ': AU and samples/s' +
                                     (isNum(knee) ? ' (knee at ' + knee + ', starred)' : ' (no knee)') } },
                 scales: { x: { title: { display: true, text: r.axis } },
                           au: { position: 'left', beginAtZero: true, suggestedMax: 100 },
                           sps: { position: 'right', beginAtZero: true, grid: { drawOnChartArea: false } } } } });
    document.body.dataset.rampKnee = isNum(knee) ? String(knee) : '';
    document.body.dataset.findMaxProbes = probes.join(',');
    if (jobs[0].job) environment(section('Environment (' + r.axis + ' ' + pts[0].n + ')'), [jobs[0].job]);
    document.body.dataset.chartsDrawn = String(Object.keys(Chart.instances).length);
    return;
  }

  if (jobs[0].kind === 'mlperf' && jobs[0].result.benchmark_type === 'checkpointing') {
    // A checkpointing set: per run a write job and a read job; the score is the mean of the runs' MLPerf figures.
    const m = jobs[0], r = m.result, sc = r.score || {};
    const reps = r.replication || [];
    const cls = r.classification && r.classification.class ? r.classification.class : 'not classified';
    const ok = reps.every(x => x.verdict === 'PASS') && cls !== 'INVALID';
    main.appendChild(verdictBox('MLPerf ' + r.model + ': replication ' + reps.map(x => x.figure + ' ' + x.verdict)
                                .join(', ') + ', ' + cls, ok ? 'PASS' : 'FAIL'));
    const agg = section('Mean of the runs (per checkpoint: duration the maximum over ranks, throughput the minimum)');
    agg.appendChild(table('summary', ['', 'value'], [
      ['write (GiB/s)', fmt(sc.write_GiB_per_second, 3)], ['write duration (s)', fmt(sc.write_duration_seconds, 3)],
      ['read (GiB/s)', fmt(sc.read_GiB_per_second, 3)], ['read duration (s)', fmt(sc.read_duration_seconds, 3)],
      ['classification', cls]].concat(reps.map(x => ['replication of ' + x.figure, x.verdict + ' (max deviation ' +
        fmt(isNum(x.max_deviation) ? 100 * x.max_deviation : null, 2) + ' %)']))));
    const runs = section('Runs');
    runs.appendChild(table('runs', ['run', 'job', 'GiB/s', 's per checkpoint', 'checkpoints', 'class'],
      m.runs.map(x => [x.run, x.job_id, fmt(x.GiB_per_second, 3), fmt(x.duration_seconds, 3), x.checkpoints,
                       x.class])));
    const charts = el('div', undefined, 'charts'); main.appendChild(charts);
    const labels = [...new Set(m.runs.map(x => 'run-' + x.run.split(' ')[0].replace('run-', '')))];
    const by = role => labels.map(l => (m.runs.find(x => x.run === l + ' ' + role) || {}).GiB_per_second);
    new Chart(canvas(charts, 'chart-mlperf-checkpoint'), {
      type: 'bar',
      data: { labels, datasets: [{ label: 'write GiB/s', data: by('write'), backgroundColor: colors[0] },
                                 { label: 'read GiB/s', data: by('read'), backgroundColor: colors[1] }] },
      options: { plugins: { title: { display: true, text: 'Checkpoint throughput per run (MLPerf: minimum over ranks)' } },
                 scales: { y: { beginAtZero: true } } } });
    const first = m.runs.find(x => x.job);
    if (first) environment(section('Environment (' + first.run + ')'), [first.job]);
    document.body.dataset.chartsDrawn = String(Object.keys(Chart.instances).length);
    return;
  }

  if (jobs[0].kind === 'mlperf') {
    const m = jobs[0], r = m.result;
    const cls = r.classification && r.classification.class ? r.classification.class : 'not an MLPerf workload';
    main.appendChild(verdictBox('MLPerf ' + r.model + ': AU ' + r.au_verdict + ', replication ' + r.replication_verdict +
                                ', ' + cls, r.au_verdict === 'PASS' && r.replication_verdict === 'PASS' &&
                                cls !== 'INVALID' ? 'PASS' : 'FAIL'));
    const agg = section('Aggregate of the timed runs');
    agg.appendChild(table('summary', ['', 'value'], [
      ['mean AU (%)', fmt(r.mean_au_percentage, 2)], ['AU threshold (%)', fmt(r.au_threshold_percentage, 1)],
      ['AU verdict', r.au_verdict + ' (' + r.au_failed_runs + ' run(s) below)'],
      ['mean throughput (samples/s)', fmt(r.mean_throughput_samples_per_second, 2)],
      ['replication', r.replication_verdict + ' (max deviation ' + fmt(isNum(r.replication_max_deviation) ?
        100 * r.replication_max_deviation : null, 2) + ' %, tolerance ' + fmt(100 * r.replication_tolerance, 0) + ' %)'],
      ['classification', cls], ['datasize (files)', r.required_num_files_train || 'n/a']]));
    if (r.classification && r.classification.differences) {
      agg.appendChild(table('classification', ['class', 'key', 'value', 'reason'],
        r.classification.differences.map(d => [d.class, d.key, d.value, d.reason])
          .concat((r.classification.problems || []).map(p => ['INVALID', '', '', p]))));
    }
    const runs = section('Runs');
    runs.appendChild(table('runs', ['run', 'seed', 'job', 'AU (%)', 'samples/s', 'AU verdict'],
      m.runs.map(x => [x.run, x.seed, x.job_id, fmt(x.au_percentage, 2), fmt(x.throughput_samples_per_second, 2),
                       x.warmup ? 'warm-up' : x.au_verdict])));
    const timed = m.runs.filter(x => !x.warmup);
    const charts = el('div', undefined, 'charts'); main.appendChild(charts);
    new Chart(canvas(charts, 'chart-mlperf-au'), {
      type: 'bar',
      data: { labels: timed.map(x => x.run), datasets: [
        { label: 'AU %', data: timed.map(x => x.au_percentage), backgroundColor: colors[0] },
        { type: 'line', label: 'threshold', data: timed.map(() => r.au_threshold_percentage), borderColor: colors[1],
          borderDash: [6, 4], pointRadius: 0, fill: false }] },
      options: { plugins: { title: { display: true, text: 'AU per timed run (%) and the threshold' } },
                 scales: { y: { beginAtZero: true, suggestedMax: 100 } } } });
    const mean = r.mean_throughput_samples_per_second;
    const band = f => timed.map(() => isNum(mean) ? mean * f : null);
    new Chart(canvas(charts, 'chart-mlperf-throughput'), {
      type: 'bar',
      data: { labels: timed.map(x => x.run), datasets: [
        { label: 'samples/s', data: timed.map(x => x.throughput_samples_per_second), backgroundColor: colors[0] },
        { type: 'line', label: 'mean + 5 %', data: band(1 + r.replication_tolerance), borderColor: colors[1],
          borderDash: [6, 4], pointRadius: 0, fill: false },
        { type: 'line', label: 'mean - 5 %', data: band(1 - r.replication_tolerance), borderColor: colors[1],
          borderDash: [6, 4], pointRadius: 0, fill: false }] },
      options: { plugins: { title: { display: true, text: 'Throughput per timed run and the 5 % replication band' } },
                 scales: { y: { beginAtZero: true } } } });
    const first = timed.find(x => x.job);
    if (first) environment(section('Environment (' + first.run + ')'), [first.job]);
    document.body.dataset.chartsDrawn = String(Object.keys(Chart.instances).length);
    return;
  }

  // One job, or two side by side (A and B).
  jobs.forEach(j => {
    main.appendChild(verdictBox((jobs.length > 1 ? j.tag + ': ' : '') + 'verdict: ' + j.verdict.line, j.verdict.status));
    if (j.verdict.limit) main.appendChild(el('p', (jobs.length > 1 ? j.tag + ': ' : '') + j.verdict.limit, 'limit'));
  });
  const rows = [
    ['Job', j => j.job_id], ['Model', j => j.model], ['Format', j => j.format],
    ['Nodes (num_hosts)', j => j.num_hosts], ['Ranks (accelerators)', j => j.num_accelerators],
    ['Start', j => j.start], ['End', j => j.end],
    ['AU mean (%)', j => fmt(j.summary.au_mean_percentage, 2), j => j.summary.au_mean_percentage],
    ['AU stdev over epochs', j => fmt(j.summary.au_stdev_percentage, 2)],
    ['AU target (%)', j => fmt(j.au_target, 1)],
    ['Verdict', j => j.verdict.status],
    ['Throughput (samples/s)', j => fmt(j.summary.throughput_mean_samples_per_second, 2),
      j => j.summary.throughput_mean_samples_per_second],
    ['I/O (MiB/s, DLIO)', j => fmt(j.summary.io_mean_MB_per_second, 2), j => j.summary.io_mean_MB_per_second],
    ['I/O measured (MB/s)', j => fmt(j.summary.io_actual_mean_MB_per_second, 2),
      j => j.summary.io_actual_mean_MB_per_second],
    ['I/O needed at 100 % AU (MB/s)', j => j.demand ? fmt(j.demand.bytes_per_second_fleet / 1e6, 2) : 'n/a'],
    ['Read latency p50 (ms)', j => fmt(ms(j.latency.p50), 3), j => j.latency.p50],
    ['Read latency p99 (ms)', j => fmt(ms(j.latency.p99), 3), j => j.latency.p99],
  ];
  const summary = section('Summary');
  const st = el('table'); st.id = 'summary';
  const head = el('tr'); head.appendChild(el('th', ''));
  jobs.forEach(j => head.appendChild(el('th', j.tag)));
  if (jobs.length === 2) head.appendChild(el('th', 'B / A'));
  st.appendChild(head);
  rows.forEach(([name, text, value]) => {
    const tr = el('tr'); tr.appendChild(el('th', name));
    jobs.forEach(j => tr.appendChild(el('td', String(text(j)))));
    if (jobs.length === 2) {
      const a = value ? value(jobs[0]) : null, b = value ? value(jobs[1]) : null;
      tr.appendChild(el('td', isNum(a) && a !== 0 && isNum(b) ? fmt(b / a, 3) : ''));
    }
    st.appendChild(tr);
  });
  summary.appendChild(st);

  const charts = section('Charts'); charts.className = 'charts';
  const epochLabels = [...new Set(jobs.flatMap(j => j.epochs.map(e => e.epoch)))].sort((a, b) => a - b);
  const perEpoch = (j, key) => epochLabels.map(n => { const e = j.epochs.find(x => x.epoch === n); return e ? e[key] : null; });
  const labels = epochLabels.map(n => 'epoch ' + n);
  const dashed = (label, data, color) => ({ type: 'line', label, data, borderColor: color, borderDash: [6, 4],
                                             pointRadius: 0, fill: false });
  const auSets = jobs.map((j, i) => ({ label: j.tag + ' AU %', data: perEpoch(j, 'au'), backgroundColor: colors[i] }));
  jobs.forEach((j, i) => { if (isNum(j.au_target)) auSets.push(dashed(j.tag + ' target', epochLabels.map(() => j.au_target), colors[i])); });
  new Chart(canvas(charts, 'chart-au'), {
    type: 'bar', data: { labels, datasets: auSets },
    options: { plugins: { title: { display: true, text: 'Accelerator utilisation per epoch (%) against the target' } },
               scales: { y: { beginAtZero: true, suggestedMax: 100 } } } });
  const bwSets = jobs.map((j, i) => ({ label: j.tag + ' delivered MB/s', data: perEpoch(j, 'actual_mb_per_second'),
                                       backgroundColor: colors[i] }));
  jobs.forEach((j, i) => { if (j.demand) bwSets.push(dashed(j.tag + ' needed at 100 % AU',
    epochLabels.map(() => j.demand.bytes_per_second_fleet / 1e6), colors[i])); });
  new Chart(canvas(charts, 'chart-bandwidth'), {
    type: 'bar', data: { labels, datasets: bwSets },
    options: { plugins: { title: { display: true, text: 'Bytes/s needed vs delivered (MB/s, 10^6)' } },
               scales: { y: { beginAtZero: true } } } });
  new Chart(canvas(charts, 'chart-throughput'), {
    type: 'bar',
    data: { labels, datasets: jobs.map((j, i) => ({ label: j.tag + ' samples/s', data: perEpoch(j, 'samples_per_second'),
                                                   backgroundColor: colors[i] })) },
    options: { plugins: { title: { display: true, text: 'Throughput per epoch (samples/s)' } },
               scales: { y: { beginAtZero: true } } } });
  new Chart(canvas(charts, 'chart-latency-cdf'), {
    type: 'line',
    data: { datasets: jobs.map((j, i) => ({ label: j.tag + ' reads', data: j.cdf, borderColor: colors[i],
                                            backgroundColor: colors[i], stepped: 'after', pointRadius: 2 })) },
    options: { plugins: { title: { display: true, text: 'Read latency CDF (bucket upper bounds)' } },
               scales: { x: { type: 'logarithmic', title: { display: true, text: 'seconds' } },
                         y: { min: 0, max: 1, title: { display: true, text: 'fraction of reads' } } } } });

  if (jobs.some(j => j.eval.length > 0)) {
    const ev = section('Evaluation');
    jobs.forEach(j => { if (j.eval.length) ev.appendChild(table('eval', ['job', 'evaluation', 'AU (%)', 'samples/s'],
      j.eval.map(e => [j.tag, e.n, fmt(e.au, 2), fmt(e.samples_per_second, 2)]))); });
  }
  if (jobs.some(j => j.checkpoints.length > 0)) {
    const ck = section('Checkpoints');
    jobs.forEach(j => { if (j.checkpoints.length) ck.appendChild(table('checkpoints',
      ['job', 'operation', 'GiB', 'rank-0 s', 'rank-0 GiB/s', 'max s (MLPerf)', 'min GiB/s (MLPerf)'],
      j.checkpoints.map(c => [j.tag, c.operation + ' ' + c.index, fmt(c.bytes / 2 ** 30, 3),
        fmt(c.rank0_duration_seconds, 3), fmt(c.rank0_GiB_per_second, 3), fmt(c.max_duration_seconds, 3),
        fmt(c.min_GiB_per_second, 3)]))); });
  }

  const cfg = section('Configuration');
  if (jobs.length === 2) {
    const keys = [...new Set(Object.keys(jobs[0].config).concat(Object.keys(jobs[1].config)))].sort();
    const diff = keys.filter(k => jobs[0].config[k] !== jobs[1].config[k]);
    cfg.appendChild(el('p', diff.length + ' key(s) of the effective workloads differ between A and B:'));
    cfg.appendChild(table('config-diff', ['key', 'A', 'B'],
      diff.map(k => [k, jobs[0].config[k] === undefined ? '(absent)' : jobs[0].config[k],
                     jobs[1].config[k] === undefined ? '(absent)' : jobs[1].config[k]])));
  } else {
    const d = el('details'); d.appendChild(el('summary', 'The effective workload (job.yaml, every key)'));
    d.appendChild(table('config', ['key', 'value'], Object.entries(jobs[0].config)));
    cfg.appendChild(d);
  }
  environment(section('Environment'), jobs);

  const rankBox = section('Per rank (training steps only)'); rankBox.className = 'side';
  jobs.forEach(j => {
    const box = el('div'); box.appendChild(el('h3', j.tag + ': ' + j.job_id));
    box.appendChild(table('ranks', ['Rank', 'Agent', 'Node', 'Epoch', 'AU (%)', 'Samples/s', 'Read MB', 'Read p50 (ms)',
                                    'Read p99 (ms)'],
      j.ranks.flatMap(r => r.epochs.map(e => [r.rank, r.agent, r.node, e.epoch, fmt(e.au, 2), fmt(e.samples_per_second, 2),
        fmt(e.read_bytes / 1e6, 2), fmt(ms(e.p50), 3), fmt(ms(e.p99), 3)]))));
    rankBox.appendChild(box);
  });
  document.body.dataset.chartsDrawn = String(Object.keys(Chart.instances).length);

  function environment(box, js) {
    js.forEach(j => {
      const env = j.environment || {};
      box.appendChild(el('p', (js.length > 1 ? j.tag + ': ' : '') + (env.tool || 'dlio-cpp') + ' ' +
                               (env.version || '') + ' (' + (env.git_commit || 'unknown commit') + ')'));
      box.appendChild(table('environment', ['agent', 'node', 'kernel', 'CPU', 'CPUs', 'memory (GiB)', 'data file system'],
        (env.agents || []).map(a => [a.agent, a.hostname, a.kernel, a.cpu_model, a.cpu_count,
                                     fmt(a.memory_bytes / 2 ** 30, 1), a.data_root_fs])));
    });
  }

)js";

}  // namespace

bool ReportHasChartLibrary() { return kChartJs[0] != '\0'; }

absl::StatusOr<std::string> RenderReport(const std::vector<std::string>& result_dirs) {
  if (result_dirs.empty() || result_dirs.size() > 2) {
    return absl::InvalidArgumentError("report: give one result folder, or two to compare");
  }
  if (!ReportHasChartLibrary()) {
    return absl::FailedPreconditionError(
        "report: this binary was built without Chart.js (node_modules/chart.js was missing at build time); run "
        "scripts/setup.sh (npm ci) and rebuild");
  }
  std::error_code scenario_ec;
  if (result_dirs.size() == 1 && fs::exists(fs::path(result_dirs[0]) / "scenario.json", scenario_ec)) {
    absl::StatusOr<json> scenario = report_internal::LoadScenario(result_dirs[0]);  // report/scenario_page.h
    if (!scenario.ok()) return scenario.status();
    return report_internal::ScenarioPageHtml(*scenario, kChartJs);
  }
  json jobs = json::array();
  const char* tags[] = {"A", "B"};
  for (size_t i = 0; i < result_dirs.size(); ++i) {
    const fs::path dir = result_dirs[i];
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return absl::NotFoundError(absl::StrCat(dir.string(), ": not a result folder"));
    absl::StatusOr<json> job = fs::exists(dir / "summary.json", ec)
                                   ? LoadJob(dir, result_dirs.size() == 1 ? "job" : tags[i])
                               : fs::exists(dir / "ramp.json", ec) ? LoadRamp(dir)
                                                                   : LoadMlperf(dir);
    if (!job.ok()) return job.status();
    if ((*job)["kind"] == "ramp" && result_dirs.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(dir.string(), ": a ramp folder is reported on its own"));
    }
    if ((*job)["kind"] == "mlperf" && result_dirs.size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir.string(), ": an --mlperf result folder is reported on its own (its runs side by side)"));
    }
    jobs.push_back(*job);
  }
  std::string title = "DLIO report: " + jobs[0]["job_id"].get<std::string>();
  if (jobs.size() == 2) title += " vs " + jobs[1]["job_id"].get<std::string>();

  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + HtmlEscape(title) +
          "</title>\n<style>\n"
          "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}\n"
          "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;"
          "text-align:right}th{background:#f4f4f4}\n"
          ".verdict{font-size:1.2em;font-weight:600;padding:.4em .8em;border-radius:4px}\n"
          ".pass{background:#e6f4ea;color:#137333}.fail{background:#fce8e6;color:#a50e0e}"
          ".other{background:#fef7e0;color:#8a5a00}\n"
          ".charts{display:flex;flex-wrap:wrap;gap:1em}.side{display:grid;grid-template-columns:repeat(" +
          std::to_string(jobs.size()) + ",1fr);gap:1em}\n</style>\n</head>\n<body>\n<h1>" + HtmlEscape(title) +
          "</h1>\n<div id=\"main\"></div>\n"
          "<p>Definitions: docs/results.md (n/m: not measured, DLIO's metric window leaves too few steps). Charts "
          "drawn with Chart.js (MIT), embedded.</p>\n";
  html += DataElement(jobs);
  html += "<script>\n";
  html += kChartJs;
  html += "\n</script>\n<script>";
  html += PageScript(kPageScript);
  html += "</script>\n</body>\n</html>\n";
  return html;
}

int WriteReportFile(const std::vector<std::string>& result_dirs, const std::string& output, std::ostream& out,
                    std::ostream& err) {
  absl::StatusOr<std::string> html = RenderReport(result_dirs);
  if (!html.ok()) {
    err << "dlio-coordinator report: " << html.status().message() << "\n";
    return 2;
  }
  if (absl::Status s = WriteFileAtomic(output, *html); !s.ok()) {
    err << "dlio-coordinator report: " << s.message() << "\n";
    return 3;
  }
  out << "report written to " << output << "\n";
  return 0;
}

}  // namespace dlio
