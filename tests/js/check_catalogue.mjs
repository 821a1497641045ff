// docs/metrics.md against live scrapes: every metric family an agent or the coordinator exports appears in the
// catalogue with the same type and the exact HELP text and a unit, and every catalogue row is exported by one of
// them. Rows are the markdown table lines "| `name` | type | unit | labels | HELP |".
// --summary: the README's shorter tables ("| `name` | type | unit | meaning |"): every exported dlio_ family appears
// with its type and a unit, and every row is exported (HELP texts and prometheus-cpp's exposer_ families are left to
// docs/metrics.md).
// --optional PREFIX: documented families whose names start with PREFIX may be absent from the scrapes (families an
// agent exports only once it used the feature, e.g. dlio_s3_ for object storage); exported ones are still checked.
//   node tests/js/check_catalogue.mjs [--summary] [--optional PREFIX] DOC.md SCRAPE.txt...
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
let summary = false;
let optional = null;
for (;;) {
  if (args[0] === '--summary') { summary = true; args.splice(0, 1); }
  else if (args[0] === '--optional') { optional = args[1]; args.splice(0, 2); }
  else break;
}
const [doc, ...scrapes] = args;
const rows = new Map();
for (const line of readFileSync(doc, 'utf8').split('\n')) {
  const m = summary ? /^\|\s*`([a-z_:][a-z0-9_:]*)`\s*\|([^|]*)\|([^|]*)\|(.*)\|\s*$/.exec(line)
                    : /^\|\s*`([a-z_:][a-z0-9_:]*)`\s*\|([^|]*)\|([^|]*)\|([^|]*)\|(.*)\|\s*$/.exec(line);
  // The README has other tables of the same shape (formats): only metric names count there.
  if (m && (!summary || m[1].startsWith('dlio_'))) {
    rows.set(m[1], { type: m[2].trim(), unit: m[3].trim(), help: summary ? undefined : m[5].trim() });
  }
}
const exported = new Map();
for (const file of scrapes) {
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    let m = /^# HELP (\S+) (.*)$/.exec(line);
    if (m) exported.set(m[1], { ...(exported.get(m[1]) ?? {}), help: m[2] });
    m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (m) exported.set(m[1], { ...(exported.get(m[1]) ?? {}), type: m[2] });
  }
}
const problems = [];
for (const [name, e] of exported) {
  if (summary && !name.startsWith('dlio_')) continue;
  const r = rows.get(name);
  if (!r) { problems.push(`${name}: exported but not in ${doc}`); continue; }
  if (r.type !== e.type) problems.push(`${name}: type ${e.type} exported, ${r.type} documented`);
  if (!summary && r.help !== e.help) problems.push(`${name}: HELP "${e.help}" exported, "${r.help}" documented`);
  if (!r.unit) problems.push(`${name}: no unit documented`);
}
for (const name of rows.keys()) {
  if (!exported.has(name) && !(optional && name.startsWith(optional))) {
    problems.push(`${name}: documented but not exported`);
  }
}
console.log(`${exported.size} families exported, ${rows.size} documented`);
for (const p of problems) console.log(`  ${p}`);
process.exit(problems.length || exported.size === 0 ? 1 : 0);
