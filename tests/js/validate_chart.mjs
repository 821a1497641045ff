// Checks a rendered Helm chart the way `helm install` would before talking to a cluster, offline:
//  - the merged values (minihelm --values-json) validate against the chart's values.schema.json (ajv, draft-07);
//  - every rendered manifest validates against the Kubernetes OpenAPI schemas of npm kubernetes-models (and the
//    ServiceMonitor against @kubernetes-models/prometheus-operator).
//   node tests/js/validate_chart.mjs values.schema.json VALUES.json [MANIFESTS.yaml]
// Prints one line per object; exits 1 on the first kind of failure found (all problems are printed).
import Ajv from 'ajv';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

const [schemaFile, valuesFile, manifestsFile] = process.argv.slice(2);
const problems = [];
const validateValues = new Ajv({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(schemaFile, 'utf8')));
if (!validateValues(JSON.parse(readFileSync(valuesFile, 'utf8')))) {
  for (const e of validateValues.errors) problems.push(`values.schema.json: ${e.instancePath || '/'} ${e.message}`);
} else {
  console.log('values: valid against values.schema.json');
}

if (manifestsFile) {
  let count = 0;
  for (const doc of parseAllDocuments(readFileSync(manifestsFile, 'utf8'))) {
    if (doc.errors.length) { problems.push(`YAML: ${doc.errors.map((e) => e.message).join('; ')}`); continue; }
    const o = doc.toJSON();
    if (!o) continue;
    ++count;
    const where = `${o.kind}/${o.metadata?.name}`;
    const [group, version] = o.apiVersion.includes('/') ? o.apiVersion.split('/') : [null, o.apiVersion];
    const pkg = group === 'monitoring.coreos.com' ? '@kubernetes-models/prometheus-operator' : 'kubernetes-models';
    let mod;
    try {
      mod = await import(`${pkg}/${group ? group + '/' : ''}${version}/${o.kind}`);
    } catch (e) {
      problems.push(`${where}: no schema for ${o.apiVersion} ${o.kind}`);
      continue;
    }
    try {
      new (mod[o.kind] ?? mod.default)(o).validate();
      console.log(`${where} (${o.apiVersion}): valid`);
    } catch (e) {
      problems.push(`${where}: ${e.message}`);
    }
  }
  if (count === 0) problems.push('no manifest rendered');
}
for (const p of problems) console.error(p);
process.exit(problems.length ? 1 : 0);
