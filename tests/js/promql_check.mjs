// Every PromQL expression of every dashboard panel and of dashboards/rules.yml, queried against a live Prometheus
// during a run (tests/observe/prometheus_fleet.sh drives it). An expression "returns data" when an instant query
// gives at least one sample with a finite value; the queries are repeated every 2 s until DONE_FILE exists (plus
// one last round), so expressions that only have data in one phase (generation) are caught when it happens.
// Expressions empty by design are listed in EMPTY_BY_DESIGN with the reason: only alerts, which have data only
// while their condition holds, so they may go either way. (A `missing feature` entry must stay empty, so the list
// is updated when the feature arrives; evaluation and checkpoint panels left the list when those phases did.)
// DLIO_NO_LINK_SPEED (set by prometheus_fleet.sh, with its reason, only where no interface reports a link speed and
// the test could not make one that does) adds the two link-speed queries.
//   node tests/js/promql_check.mjs PROMETHEUS_URL DONE_FILE DASHBOARD.json... RULES.yml
import { readFileSync, existsSync } from 'node:fs';
import { parse } from 'yaml';

const [url, doneFile, ...files] = process.argv.slice(2);

// Grafana's variables, as a dashboard user with this run selected would have them.
const substitute = (expr) => expr
  .replaceAll('$__rate_interval', '10s')   // Grafana: max(4 x scrape interval (1 s here), step + scrape)
  .replaceAll('$job_id', '.+')              // one job in the run
  .replaceAll('$agent', '.+');              // "All"

const S3_ONLY = { kind: 'storage type', reason: 'S3 series exist only once an agent used object storage; this run reads files (tests/s3_test.cc checks the S3 families on an S3 job\'s scrape)' };
const EMPTY_BY_DESIGN = {
  'agents.json / S3 requests/s per operation / A': S3_ONLY,
  'agents.json / S3 request latency p99 per operation / A': S3_ONLY,
  'agents.json / S3 errors and retries/s / A': S3_ONLY,
  'agents.json / S3 errors and retries/s / B': S3_ONLY,
  ...(process.env.DLIO_NO_LINK_SPEED ? {
    'agents.json / NIC throughput against link speed / B': { kind: 'host', reason: process.env.DLIO_NO_LINK_SPEED },
    'agents.json / NIC utilisation of link speed / A': { kind: 'host', reason: process.env.DLIO_NO_LINK_SPEED },
  } : {}),
  'rules.yml / alert DlioAcceleratorUtilizationBelowTarget':
    { kind: 'alert', reason: 'an alert expression has data only while its condition holds (AU below target while training)' },
  'rules.yml / alert DlioAgentDown':
    { kind: 'alert', reason: 'an alert expression has data only while its condition holds (an agent not answering scrapes)' },
};

const exprs = [];
for (const file of files) {
  const name = file.split('/').pop();
  if (file.endsWith('.json')) {
    const d = JSON.parse(readFileSync(file, 'utf8'));
    for (const p of d.panels ?? []) {
      for (const t of p.targets ?? []) exprs.push({ key: `${name} / ${p.title} / ${t.refId}`, expr: substitute(t.expr) });
    }
    for (const v of d.templating?.list ?? []) {
      const q = typeof v.query === 'object' ? v.query.query : v.query;
      const m = /^label_values\((.*),\s*(\w+)\)$/.exec(q ?? '');
      if (m) exprs.push({ key: `${name} / variable ${v.name}`, expr: substitute(m[1]) });
    }
  } else {
    for (const g of parse(readFileSync(file, 'utf8')).groups) {
      for (const r of g.rules) {
        exprs.push({ key: `${name} / ${r.record ? 'record ' + r.record : 'alert ' + r.alert}`, expr: r.expr.trim() });
        if (r.record) exprs.push({ key: `${name} / recorded series ${r.record}`, expr: r.record, rule_of: `${name} / record ${r.record}` });
      }
    }
  }
}

async function query(expr) {
  const res = await fetch(`${url}/api/v1/query`, { method: 'POST', body: new URLSearchParams({ query: expr }) });
  const j = await res.json();
  if (j.status !== 'success') throw new Error(`${j.errorType}: ${j.error}`);
  const finite = (v) => Number.isFinite(Number(v));
  if (j.data.resultType === 'vector') return j.data.result.filter((s) => finite(s.value[1])).length;
  if (j.data.resultType === 'scalar') return finite(j.data.result[1]) ? 1 : 0;
  return 0;
}

const seen = new Map(exprs.map((e) => [e.key, 0]));
const errors = new Map();
let rounds = 0;
for (let last = false; ; ) {
  last = existsSync(doneFile);
  ++rounds;
  for (const e of exprs) {
    try {
      const n = await query(e.expr);
      if (n > 0) seen.set(e.key, seen.get(e.key) + 1);
    } catch (err) {
      errors.set(e.key, String(err));
    }
  }
  if (last) break;
  await new Promise((r) => setTimeout(r, 2000));
}

let failures = 0;
console.log(`${exprs.length} expressions, ${rounds} query rounds`);
for (const e of exprs) {
  const hits = seen.get(e.key);
  const design = EMPTY_BY_DESIGN[e.key] ?? (e.rule_of ? EMPTY_BY_DESIGN[e.rule_of] : undefined);
  let verdict;
  if (errors.has(e.key)) { verdict = `FAIL query error: ${errors.get(e.key)}`; ++failures; }
  else if (!design) { verdict = hits ? `data (${hits}/${rounds} rounds)` : 'FAIL no data'; if (!hits) ++failures; }
  else if (design.kind === 'missing feature') {
    verdict = hits ? `FAIL has data although listed as empty (${design.reason}): update the list` : `empty by design: ${design.reason}`;
    if (hits) ++failures;
  } else {
    verdict = `${hits ? `data (${hits}/${rounds} rounds)` : 'empty'}; may be empty by design: ${design.reason}`;
  }
  console.log(`${verdict.startsWith('FAIL') ? 'FAIL' : 'ok  '}  ${e.key}: ${verdict}`);
}
for (const key of Object.keys(EMPTY_BY_DESIGN)) {
  if (!seen.has(key)) { console.log(`FAIL  EMPTY_BY_DESIGN names an unknown expression: ${key}`); ++failures; }
}
console.log(`expressions: ${exprs.length - failures} ok, ${failures} failing`);
process.exit(failures ? 1 : 0);
