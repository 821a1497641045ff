// Validates Grafana dashboard JSON files against a JSON Schema generated from Grafana's own TypeScript types
// (npm @grafana/schema, the classic dashboard model: raw/dashboard/x/types.gen.d.ts, type Dashboard) with
// ts-json-schema-generator, using ajv. Also checks what the schema cannot: every panel has a datasource, every
// query target has an expression, ids are unique, the datasource, job_id and agent variables exist, and a
// "Config from query results" transformation reads a query of its panel and a field that query returns. Concurrent
// jobs (issue 30): the job_id variable takes several jobs ("multi" and "All"), and every time series or bar gauge
// query that selects on $job_id keeps job_id in its series (its legend names {{job_id}}), so the jobs selected show
// side by side instead of summed into one line.
//   node tests/js/validate_dashboards.mjs DASHBOARD.json...   (exit 1 on any failure)
import { createGenerator } from 'ts-json-schema-generator';
import Ajv from 'ajv';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const schemaDir = join(dirname(require.resolve('@grafana/schema/package.json')), 'dist/types/raw/dashboard/x');
// Generating takes ~5 s; DASHBOARD_SCHEMA_CACHE (a file path) lets one test reuse it.
const cache = process.env.DASHBOARD_SCHEMA_CACHE;
const schema = cache && existsSync(cache) ? JSON.parse(readFileSync(cache, 'utf8')) : createGenerator({
  path: join(schemaDir, 'types.gen.d.ts'), type: 'Dashboard', skipTypeCheck: true, additionalProperties: true,
}).createSchema('Dashboard');
if (cache && !existsSync(cache)) writeFileSync(cache, JSON.stringify(schema));
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

let failed = 0;
for (const file of process.argv.slice(2)) {
  const problems = [];
  const d = JSON.parse(readFileSync(file, 'utf8'));
  if (!validate(d)) {
    // Panels are `Panel | RowPanel`: a bad panel also reports RowPanel's required properties; print them all.
    for (const e of validate.errors) problems.push(`schema: ${e.instancePath || '/'} ${e.message}`);
  }
  const vars = (d.templating?.list ?? []).map((v) => v.name);
  for (const v of ['datasource', 'job_id']) if (!vars.includes(v)) problems.push(`missing template variable ${v}`);
  const jobVar = (d.templating?.list ?? []).find((v) => v.name === 'job_id');
  if (jobVar && !(jobVar.multi && jobVar.includeAll)) problems.push('variable job_id: not multi-select with All');
  const ids = new Set();
  let queries = 0;
  for (const p of d.panels ?? []) {
    if (ids.has(p.id)) problems.push(`duplicate panel id ${p.id}`);
    ids.add(p.id);
    if (p.type === 'row') continue;
    if (p.datasource?.uid !== '${datasource}') problems.push(`panel "${p.title}": datasource is not \${datasource}`);
    if (!p.targets?.length) problems.push(`panel "${p.title}": no query`);
    for (const t of p.targets ?? []) {
      ++queries;
      if (!t.expr) problems.push(`panel "${p.title}" ${t.refId}: empty expr`);
      if (['timeseries', 'bargauge'].includes(p.type) && t.expr?.includes('$job_id') &&
          !t.legendFormat?.includes('{{job_id}}')) {
        problems.push(`panel "${p.title}" ${t.refId}: selects $job_id but its legend has no {{job_id}} (jobs summed)`);
      }
    }
    // "Config from query results" (thresholds from a metric, e.g. the AU target): the config query exists and each
    // mapped field is one it returns (its legendFormat), else Grafana silently keeps the static thresholds.
    for (const tr of p.transformations ?? []) {
      if (tr.id !== 'configFromData') continue;
      const config = (p.targets ?? []).find((t) => t.refId === tr.options?.configRefId);
      if (!config) problems.push(`panel "${p.title}": configFromData reads query ${tr.options?.configRefId}, not in the panel`);
      for (const m of tr.options?.mappings ?? []) {
        if (config && m.fieldName !== config.legendFormat) {
          problems.push(`panel "${p.title}": configFromData maps field "${m.fieldName}", query ${config.refId} returns "${config.legendFormat}"`);
        }
      }
    }
  }
  console.log(`${file}: schemaVersion ${d.schemaVersion}, ${d.panels?.length ?? 0} panels, ${queries} queries, ` +
              `variables ${vars.join(', ')}: ${problems.length ? 'INVALID' : 'valid'}`);
  for (const p of problems) console.log(`  ${p}`);
  if (problems.length) ++failed;
}
process.exit(failed ? 1 : 0);
