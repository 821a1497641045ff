#include "report/scenario_page.h"

#include <fstream>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "report/page_common.h"

namespace dlio::report_internal {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// One <agent>_host.jsonl as the timeline's series: seconds from `t0_ms`, CPU busy, disk MB/s summed over devices.
json HostSeries(const fs::path& file, int64_t t0_ms) {
  json series = json::array();
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const json s = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!s.is_object() || !s["unix_ms"].is_number()) continue;  // a line cut short: skipped, the rest drawn
    double rd = 0, wr = 0;
    for (const json& d : s.value("disks", json::array())) {
      rd += d.value("read_bytes_per_second", 0.0);
      wr += d.value("write_bytes_per_second", 0.0);
    }
    series.push_back({{"t", (s["unix_ms"].get<double>() - static_cast<double>(t0_ms)) / 1000},
                      {"cpu_busy_percent", s.contains("cpu") ? s["cpu"].value("busy", 0.0) : 0.0},
                      {"disk_read_MB_per_second", rd / 1e6},
                      {"disk_write_MB_per_second", wr / 1e6}});
  }
  return series;
}

// The host telemetry of every run of the scenario, keyed "<side>/<member>/run-<k>/<agent>".
json Telemetry(const fs::path& dir, const json& doc) {
  json out = json::object();
  const int64_t t0 = doc.value("started_unix_ms", int64_t{0});
  for (const json& m : doc["members"]) {
    for (const char* side : {"alone", "together"}) {
      if (!m[side].is_object()) continue;
      for (const json& run : m[side].value("runs", json::array())) {
        std::error_code ec;
        const fs::path folder = dir / run.value("folder", "");
        for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
          const std::string name = it->path().filename().string();
          if (!absl::EndsWith(name, "_host.jsonl")) continue;
          const std::string agent = name.substr(0, name.size() - std::string("_host.jsonl").size());
          json series = HostSeries(it->path(), t0);
          if (!series.empty()) out[absl::StrCat(run.value("folder", ""), "/", agent)] = std::move(series);
        }
      }
    }
  }
  return out;
}

// The page script: the members, the interference tables, the timeline and the telemetry (animation off, so the
// charts are complete at load).
constexpr const char* kScenarioScript = R"js(
  const s = JSON.parse(document.getElementById('dlio-data').textContent);
  const colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22'];
  const figures = [['au_percentage', 'AU (%)', 1], ['samples_per_second', 'samples/s', 1],
                   ['mb_per_second', 'MB/s', 1], ['read_latency_p50_seconds', 'read p50 (ms)', 1e3],
                   ['read_latency_p99_seconds', 'read p99 (ms)', 1e3], ['write_latency_p50_seconds', 'write p50 (ms)', 1e3],
                   ['write_latency_p99_seconds', 'write p99 (ms)', 1e3], ['checkpoint_write_seconds', 'checkpoint write (s)', 1],
                   ['checkpoint_read_seconds', 'checkpoint read (s)', 1]];
  const fmt = (v, scale) => isNum(v) ? (v * scale).toFixed(2) : 'n/m';
  if (s.description) main.appendChild(el('p', s.description));

  const timing = m => (m.start_seconds ? 'start +' + m.start_seconds + ' s' : 'start 0') +
      (isNum(m.repeat_every_seconds) ? ', every ' + m.repeat_every_seconds + ' s' : '') +
      (isNum(m.times) ? ', at most ' + m.times + ' runs' : '') + (m.until ? ', until ' + m.until + ' ends' : '');
  section('Members').appendChild(table('members', ['member', 'workload', 'agents', 'accelerators', 'timing', 'runs together'],
    s.members.map(m => [m.name, m.workload || m.job, m.placement.agents || 'all', m.placement.accelerators || 'offered',
                        timing(m), m.together.runs.length])));

  const inter = section(s.baseline ? 'Interference: each member alone vs together' : 'Figures together (no --baseline)');
  s.members.forEach(m => {
    inter.appendChild(el('h3', m.name));
    const verdicts = s.baseline ? 'verdict: alone ' + (m.alone.figures.verdict || '-') + ', together ' +
                                  (m.together.figures.verdict || '-') : 'verdict: ' + (m.together.figures.verdict || '-');
    const worse = s.baseline && (m.interference || []).some(r => r.direction === 'worse');
    inter.appendChild(el('p', verdicts, 'verdict ' + (worse ? 'fail' : 'pass')));
    if (s.baseline) {
      inter.appendChild(table('interference', ['figure', 'alone', 'together', 'delta (%)', 'direction'],
        m.interference.map((r, i) => [r, figures[i]]).filter(([r]) => isNum(r.alone) || isNum(r.together))
          .map(([r, f]) => [f[1], fmt(r.alone, f[2]), fmt(r.together, f[2]), fmt(r.delta_percent, 1),
                            r.direction || 'n/m'])));
    } else {
      inter.appendChild(table('interference', ['figure', 'together'],
        figures.filter(f => isNum(m.together.figures[f[0]])).map(f => [f[1], fmt(m.together.figures[f[0]], f[2])])));
    }
  });

  // One timeline: a lane per member and side, a bar per run; the telemetry below on the same axis.
  const lanes = [], bars = [];
  s.members.forEach((m, i) => ['alone', 'together'].forEach(side => {
    if (!m[side]) return;
    const lane = m.name + (s.baseline ? ' (' + side + ')' : '');
    lanes.push(lane);
    m[side].runs.forEach(r => bars.push({ lane, i, r,
      x: [(r.start_unix_ms - s.started_unix_ms) / 1000, (r.end_unix_ms - s.started_unix_ms) / 1000] }));
  }));
  const tl = section('Timeline (seconds from the scenario\'s start)');
  const charts = el('div', undefined, 'charts'); tl.appendChild(charts);
  const end = Math.max(1, ...bars.map(b => b.x[1]));
  new Chart(canvas(charts, 'chart-timeline', 900, 60 + 34 * lanes.length), {
    type: 'bar',
    data: { labels: lanes, datasets: s.members.map((m, i) => ({
      label: m.name, backgroundColor: colors[i % colors.length], borderSkipped: false, grouped: false,
      data: bars.filter(b => b.i === i).map(b => ({ x: b.x, y: b.lane })) })) },
    options: { indexAxis: 'y', plugins: { title: { display: true, text: 'Runs of every member (a bar per run)' } },
               scales: { x: { type: 'linear', min: 0, max: end, title: { display: true, text: 's' } } } } });
  const tel = Object.entries(s.telemetry || {});
  if (tel.length) {
    const series = (key, label) => tel.map(([name, pts], k) => ({ label: name + ' ' + label,
      data: pts.map(p => ({ x: p.t, y: p[key] })), borderColor: colors[k % colors.length], pointRadius: 0 }));
    new Chart(canvas(charts, 'chart-host-cpu', 900, 260), { type: 'line',
      data: { datasets: series('cpu_busy_percent', 'CPU busy %') },
      options: { plugins: { title: { display: true, text: 'Host telemetry: CPU busy (%) per agent and run' } },
                 scales: { x: { type: 'linear', min: 0, max: end }, y: { beginAtZero: true, suggestedMax: 100 } } } });
    new Chart(canvas(charts, 'chart-host-disk', 900, 260), { type: 'line',
      data: { datasets: series('disk_read_MB_per_second', 'read MB/s').concat(
                         series('disk_write_MB_per_second', 'write MB/s').map(d => Object.assign(d, { borderDash: [6, 3] }))) },
      options: { plugins: { title: { display: true, text: 'Host telemetry: disk read (solid) and write (dashed) MB/s' } },
                 scales: { x: { type: 'linear', min: 0, max: end }, y: { beginAtZero: true } } } });
  } else {
    tl.appendChild(el('p', 'No host telemetry in the runs\' folders (<agent>_host.jsonl).'));
  }
  document.body.dataset.scenarioRuns = String(bars.length);
  document.body.dataset.chartsDrawn = String(Object.keys(Chart.instances).length);

)js";

}  // namespace

absl::StatusOr<json> LoadScenario(const fs::path& dir) {
  const fs::path path = dir / "scenario.json";
  std::ifstream in(path);
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!in.good() && !in.eof()) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot read it"));
  if (!doc.is_object() || !doc["members"].is_array() || doc["members"].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not a scenario.json (no members)"));
  }
  for (const json& m : doc["members"]) {
    if (!m.is_object() || !m["name"].is_string() || !m["together"].is_object() || !m["together"]["runs"].is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(path.string(), ": a member without name or together.runs"));
    }
  }
  doc["telemetry"] = Telemetry(dir, doc);
  return doc;
}

std::string ScenarioPageHtml(const json& data, const std::string& chart_js) {
  const std::string title = "DLIO scenario: " + data.value("scenario", std::string("scenario"));
  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + HtmlEscape(title) +
          "</title>\n<style>\n"
          "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}\n"
          "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;"
          "text-align:right}th{background:#f4f4f4}\n"
          ".verdict{font-weight:600;padding:.3em .8em;border-radius:4px}\n"
          ".pass{background:#e6f4ea;color:#137333}.fail{background:#fce8e6;color:#a50e0e}\n"
          ".charts{display:flex;flex-direction:column;gap:1em}\n</style>\n</head>\n<body>\n<h1>" +
          HtmlEscape(title) + "</h1>\n<div id=\"main\"></div>\n"
          "<p>Definitions: docs/scenarios.md (delta = (together - alone) / alone; n/m: not measured). Charts drawn "
          "with Chart.js (MIT), embedded.</p>\n";
  html += DataElement(data);
  html += "<script>\n" + chart_js + "\n</script>\n<script>";
  html += PageScript(kScenarioScript);
  html += "</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace dlio::report_internal
