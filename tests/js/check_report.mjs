// Loads an HTML report from `dlio-coordinator report` in headless Chromium (Debian's /usr/bin/chromium, driven by
// npm playwright-core, no browser download) and checks it: no console error or page error, no network request
// (the report must open offline), and every chart drawn: each <canvas> has a Chart.js chart with data points and
// non-blank pixels. Prints one JSON line per chart; exits 1 on any failure.
//   node tests/js/check_report.mjs REPORT.html EXPECTED_CHARTS [SCREENSHOT.png]
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [file, expectedArg, screenshot] = process.argv.slice(2);
if (!file || !expectedArg) {
  console.error('usage: check_report.mjs REPORT.html EXPECTED_CHARTS [SCREENSHOT.png]');
  process.exit(2);
}
const expected = Number(expectedArg);
const userDataDir = mkdtempSync(join(tmpdir(), 'dlio-chromium-'));
const problems = [];
// The flags the machine documentation gives for Chromium on these hosts (the closed network refuses Chromium's
// background connections); playwright adds --headless and uses userDataDir as --user-data-dir.
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--disable-quic'],
  viewport: { width: 1800, height: 1200 },
});
try {
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) problems.push(`network request: ${r.url()}`); });
  await page.goto(pathToFileURL(resolve(file)).href, { waitUntil: 'load' });
  const charts = await page.evaluate(() => [...document.querySelectorAll('canvas')].map((c) => {
    const chart = window.Chart && window.Chart.getChart(c);
    const points = chart ? chart.data.datasets.reduce((n, d) => n + d.data.filter((v) => v !== null).length, 0) : 0;
    const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let painted = 0;
    for (let i = 3; i < px.length; i += 4) if (px[i] !== 0) ++painted;
    return { id: c.id, type: chart ? chart.config.type : null, datasets: chart ? chart.data.datasets.length : 0,
             points, painted_pixels: painted, total_pixels: c.width * c.height };
  }));
  for (const c of charts) {
    console.log(JSON.stringify(c));
    if (!c.type) problems.push(`${c.id}: no Chart.js chart on the canvas`);
    if (c.points === 0) problems.push(`${c.id}: no data points`);
    // Axes and labels alone paint ~2-4 % of the canvas; bars, lines and points add more.
    if (c.painted_pixels < 0.03 * c.total_pixels) problems.push(`${c.id}: only ${c.painted_pixels} pixels painted`);
  }
  if (charts.length !== expected) problems.push(`expected ${expected} charts, found ${charts.length}`);
  // A job's report has per-rank tables; an --mlperf report a table of its runs (REPORT_TABLE=table.runs).
  const selector = (process.env.REPORT_TABLE || 'table.ranks') + ' tr';
  const rows = await page.evaluate((sel) => document.querySelectorAll(sel).length, selector);
  console.log(JSON.stringify({ table: selector, rows }));
  if (rows < 2) problems.push(`${selector}: the table is empty`);
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
for (const p of problems) console.error(p);
process.exit(problems.length ? 1 : 0);
