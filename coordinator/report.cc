#include "coordinator/report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/results.h"
#include "common/workload_spec.h"
#include "nlohmann/json.hpp"

namespace dlio {

// Generated at build time from node_modules/chart.js/dist/chart.umd.js (empty when it was missing).
extern const char* const kChartJs;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

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

// Mean of a {blockN: value} object (step weights are not in the file; epochs have one block today).
double BlockMean(const json& blocks) {
  if (!blocks.is_object() || blocks.empty()) return 0;
  double s = 0;
  for (const auto& [k, v] : blocks.items()) s += v.is_number() ? v.get<double>() : 0;
  return s / static_cast<double>(blocks.size());
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

  json job;
  job["tag"] = tag;
  job["dir"] = dir.string();
  job["job_id"] = ext.value("job_id", dir.filename().string());
  job["num_hosts"] = s.value("num_hosts", 0);
  job["num_accelerators"] = s.value("num_accelerators", 0);
  job["start"] = s.value("start", "");
  job["end"] = s.value("end", "");
  job["model"] = "";
  job["format"] = "";
  job["au_target"] = nullptr;
  {
    std::ifstream in(dir / "job.yaml");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in) {
      absl::StatusOr<WorkloadSpec> spec = LoadWorkload(ss.str(), {}, (dir / "job.yaml").string());
      if (spec.ok()) {
        job["model"] = spec->model_name;
        job["format"] = spec->format;
        job["au_target"] = spec->au_threshold * 100;
      }
    }
  }
  job["summary"] = {{"au_mean_percentage", Num(metric, "train_au_mean_percentage")},
                    {"throughput_mean_samples_per_second", Num(metric, "train_throughput_mean_samples_per_second")},
                    {"io_mean_MB_per_second", Num(metric, "train_io_mean_MB_per_second")},
                    {"io_actual_mean_MB_per_second", Num(metric, "train_io_actual_mean_MB_per_second")},
                    {"read_bytes", Num(metric, "train_read_bytes")},
                    {"au_meet_expectation", metric.value("train_au_meet_expectation", "")}};
  json epochs = json::array();
  for (const json& e : ext.value("train_epochs", json::array())) {
    epochs.push_back({{"epoch", e.value("epoch", 0)},
                      {"au", Num(e, "au_percentage")},
                      {"samples_per_second", Num(e, "throughput_samples_per_second")},
                      {"mib_per_second", Num(e, "io_MiB_per_second")},
                      {"actual_mb_per_second", Num(e, "io_actual_MB_per_second")}});
  }
  job["epochs"] = epochs;
  job["latency"] = ext.value("train_read_latency_seconds", json::object());

  // CDF points (x = bucket upper bound in seconds, y = fraction of reads at or below it); the open last bucket
  // has no finite bound and is left out (its share shows as the curve not reaching 1).
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
  job["cdf"] = cdf;

  // Per rank: agent and node from dlio_ext.agents, per-epoch figures from <rank>_output.json.
  json ranks = json::array();
  const json agents = ext.value("agents", json::array());
  const int world = ext.value("world_size", s.value("num_accelerators", 0));
  for (int rank = 0; rank < world; ++rank) {
    json r;
    r["rank"] = rank;
    r["agent"] = "";
    r["node"] = "";
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
        if (!e.is_object() || !e.contains("au")) continue;
        const json io = e.value("dlio_ext", json::object()).value("io", json::object());
        const json lat = e.value("dlio_ext", json::object()).value("read_latency_seconds", json::object());
        rank_epochs.push_back({{"epoch", std::stoi(key)},
                               {"au", BlockMean(e["au"])},
                               {"samples_per_second", BlockMean(e.value("throughput", json::object()))},
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
  job["ranks"] = ranks;
  return job;
}

// JSON inside <script>: "</" must not close the element.
std::string ScriptSafe(const std::string& text) { return absl::StrReplaceAll(text, {{"</", "<\\/"}}); }

std::string HtmlEscape(const std::string& text) {
  return absl::StrReplaceAll(text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

// The page script: builds the tables and draws the charts (animation off, so they are complete at load).
constexpr const char* kPageScript = R"js(
(function () {
  const jobs = JSON.parse(document.getElementById('dlio-data').textContent);
  const colors = ['#1f77b4', '#d62728'];
  const fmt = (v, d) => (v === null || v === undefined || Number.isNaN(v)) ? '–' : Number(v).toFixed(d);
  const ms = v => (v === null || v === undefined) ? null : v * 1e3;
  const el = (tag, text) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; return e; };

  // Summary table: one column per job, plus B/A when comparing.
  const rows = [
    ['Job', j => j.job_id], ['Model', j => j.model], ['Format', j => j.format],
    ['Nodes (num_hosts)', j => j.num_hosts], ['Ranks (accelerators)', j => j.num_accelerators],
    ['Start', j => j.start], ['End', j => j.end],
    ['AU mean (%)', j => fmt(j.summary.au_mean_percentage, 2), j => j.summary.au_mean_percentage],
    ['AU target (%)', j => fmt(j.au_target, 1)],
    ['AU meets target', j => j.summary.au_meet_expectation],
    ['Throughput (samples/s)', j => fmt(j.summary.throughput_mean_samples_per_second, 2),
      j => j.summary.throughput_mean_samples_per_second],
    ['I/O (MiB/s, DLIO)', j => fmt(j.summary.io_mean_MB_per_second, 2), j => j.summary.io_mean_MB_per_second],
    ['I/O measured (MB/s)', j => fmt(j.summary.io_actual_mean_MB_per_second, 2),
      j => j.summary.io_actual_mean_MB_per_second],
    ['Read latency p50 (ms)', j => fmt(ms(j.latency.p50), 3), j => j.latency.p50],
    ['Read latency p99 (ms)', j => fmt(ms(j.latency.p99), 3), j => j.latency.p99],
  ];
  const summary = document.getElementById('summary');
  const head = el('tr'); head.appendChild(el('th', ''));
  jobs.forEach(j => head.appendChild(el('th', j.tag)));
  if (jobs.length === 2) head.appendChild(el('th', 'B / A'));
  summary.appendChild(head);
  rows.forEach(([name, text, value]) => {
    const tr = el('tr'); tr.appendChild(el('th', name));
    jobs.forEach(j => tr.appendChild(el('td', String(text(j)))));
    if (jobs.length === 2) {
      const a = value ? value(jobs[0]) : null, b = value ? value(jobs[1]) : null;
      tr.appendChild(el('td', a && b !== null && b !== undefined ? fmt(b / a, 3) : ''));
    }
    summary.appendChild(tr);
  });

  // Per-rank tables, side by side.
  const rankBox = document.getElementById('ranks');
  jobs.forEach(j => {
    const box = el('div'); box.appendChild(el('h3', j.tag + ': ' + j.job_id));
    const t = el('table'); t.className = 'ranks';
    const h = el('tr');
    ['Rank', 'Agent', 'Node', 'Epoch', 'AU (%)', 'Samples/s', 'Read MB', 'Read p50 (ms)', 'Read p99 (ms)']
      .forEach(c => h.appendChild(el('th', c)));
    t.appendChild(h);
    j.ranks.forEach(r => r.epochs.forEach(e => {
      const tr = el('tr');
      [r.rank, r.agent, r.node, e.epoch, fmt(e.au, 2), fmt(e.samples_per_second, 2), fmt(e.read_bytes / 1e6, 2),
       fmt(ms(e.p50), 3), fmt(ms(e.p99), 3)].forEach(v => tr.appendChild(el('td', String(v))));
      t.appendChild(tr);
    }));
    box.appendChild(t);
    rankBox.appendChild(box);
  });

  Chart.defaults.animation = false;
  Chart.defaults.responsive = false;
  const epochLabels = [...new Set(jobs.flatMap(j => j.epochs.map(e => e.epoch)))].sort((a, b) => a - b);
  const perEpoch = (j, key) => epochLabels.map(n => { const e = j.epochs.find(x => x.epoch === n); return e ? e[key] : null; });
  new Chart(document.getElementById('chart-throughput'), {
    type: 'bar',
    data: { labels: epochLabels.map(n => 'epoch ' + n),
            datasets: jobs.map((j, i) => ({ label: j.tag + ' samples/s', data: perEpoch(j, 'samples_per_second'),
                                            backgroundColor: colors[i] })) },
    options: { plugins: { title: { display: true, text: 'Throughput per epoch (samples/s)' } },
               scales: { y: { beginAtZero: true } } },
  });
  const auSets = jobs.map((j, i) => ({ label: j.tag + ' AU %', data: perEpoch(j, 'au'), backgroundColor: colors[i] }));
  jobs.forEach((j, i) => {
    if (j.au_target !== null) {
      auSets.push({ type: 'line', label: j.tag + ' target', data: epochLabels.map(() => j.au_target),
                    borderColor: colors[i], borderDash: [6, 4], pointRadius: 0, fill: false });
    }
  });
  new Chart(document.getElementById('chart-au'), {
    type: 'bar',
    data: { labels: epochLabels.map(n => 'epoch ' + n), datasets: auSets },
    options: { plugins: { title: { display: true, text: 'Accelerator utilisation per epoch (%) and target' } },
               scales: { y: { beginAtZero: true, suggestedMax: 100 } } },
  });
  new Chart(document.getElementById('chart-latency-cdf'), {
    type: 'line',
    data: { datasets: jobs.map((j, i) => ({ label: j.tag + ' reads', data: j.cdf, borderColor: colors[i],
                                            backgroundColor: colors[i], stepped: 'after', pointRadius: 2 })) },
    options: { plugins: { title: { display: true, text: 'Read latency CDF (bucket upper bounds)' } },
               scales: { x: { type: 'logarithmic', title: { display: true, text: 'seconds' } },
                         y: { min: 0, max: 1, title: { display: true, text: 'fraction of reads' } } } },
  });
  document.body.dataset.chartsDrawn = String(Object.keys(Chart.instances).length);
})();
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
  json jobs = json::array();
  const char* tags[] = {"A", "B"};
  for (size_t i = 0; i < result_dirs.size(); ++i) {
    absl::StatusOr<json> job = LoadJob(result_dirs[i], result_dirs.size() == 1 ? "job" : tags[i]);
    if (!job.ok()) return job.status();
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
          ".charts{display:flex;flex-wrap:wrap;gap:1em}.side{display:grid;grid-template-columns:repeat(" +
          std::to_string(jobs.size()) + ",1fr);gap:1em}\n</style>\n</head>\n<body>\n<h1>" + HtmlEscape(title) +
          "</h1>\n<h2>Summary</h2>\n<table id=\"summary\"></table>\n<h2>Charts</h2>\n<div class=\"charts\">\n"
          "<canvas id=\"chart-throughput\" width=\"560\" height=\"320\"></canvas>\n"
          "<canvas id=\"chart-au\" width=\"560\" height=\"320\"></canvas>\n"
          "<canvas id=\"chart-latency-cdf\" width=\"560\" height=\"320\"></canvas>\n</div>\n"
          "<h2>Per rank</h2>\n<div id=\"ranks\" class=\"side\"></div>\n"
          "<p>Definitions: docs/results.md. Charts drawn with Chart.js (MIT), embedded.</p>\n";
  html += "<script type=\"application/json\" id=\"dlio-data\">" + ScriptSafe(jobs.dump()) + "</script>\n";
  html += "<script>\n";
  html += kChartJs;
  html += "\n</script>\n<script>";
  html += kPageScript;
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
