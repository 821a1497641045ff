// Checks rendered manifests against a Pod Security Standards profile, as the PodSecurity admission controller would
// in a namespace labelled pod-security.kubernetes.io/enforce=<level> (kubernetes.io/docs/concepts/security/
// pod-security-standards, the policies of v1.30). Written from the standard's text, control by control:
//   node tests/js/check_pod_security.mjs [--read-only-root] baseline|restricted MANIFESTS.yaml
// --read-only-root adds a control that is not in the standard but in every hardening guide (CIS 5.7.3 asks for it
// "where possible"): each container's securityContext.readOnlyRootFilesystem is true.
// Every pod template (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob) is checked; one line per
// violation "<Kind>/<name> <where>: <control>: <what>"; exit 1 when there is any.
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

const args = process.argv.slice(2);
const readOnlyRoot = args[0] === '--read-only-root';
const [level, manifestsFile] = readOnlyRoot ? args.slice(1) : args;
if (!['baseline', 'restricted'].includes(level) || !manifestsFile) {
  console.error('usage: check_pod_security.mjs [--read-only-root] baseline|restricted MANIFESTS.yaml');
  process.exit(2);
}
const restricted = level === 'restricted';

// The pod spec of a workload object, or null.
function podSpec(o) {
  switch (o.kind) {
    case 'Pod': return o.spec;
    case 'Deployment': case 'StatefulSet': case 'DaemonSet': case 'ReplicaSet': case 'Job':
      return o.spec?.template?.spec;
    case 'CronJob': return o.spec?.jobTemplate?.spec?.template?.spec;
    default: return null;
  }
}

// Baseline "Capabilities": adding beyond this list is forbidden.
const baselineCaps = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD',
  'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']);
// Baseline "Sysctls": the safe set.
const safeSysctls = new Set(['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes']);
// Baseline "SELinux": allowed types.
const seLinuxTypes = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);
// Restricted "Volume Types": the only ones allowed.
const restrictedVolumes = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim',
  'projected', 'secret']);

function check(where, spec) {
  const v = [];
  const bad = (control, what) => v.push(`${where}: ${control}: ${what}`);
  const psc = spec.securityContext || {};
  const containers = [...(spec.containers || []).map((c) => ['container', c]),
    ...(spec.initContainers || []).map((c) => ['initContainer', c]),
    ...(spec.ephemeralContainers || []).map((c) => ['ephemeralContainer', c])];

  // ---- baseline ----
  if (psc.windowsOptions?.hostProcess) bad('HostProcess', 'pod securityContext.windowsOptions.hostProcess is true');
  for (const f of ['hostNetwork', 'hostPID', 'hostIPC']) if (spec[f]) bad('Host Namespaces', `spec.${f} is true`);
  for (const vol of spec.volumes || []) if (vol.hostPath) bad('HostPath Volumes', `volume "${vol.name}" is a hostPath`);
  if (psc.seccompProfile?.type === 'Unconfined') bad('Seccomp', 'pod seccompProfile.type is Unconfined');
  const seLinux = (o, w) => {
    if (!o) return;
    if (!seLinuxTypes.has(o.type || '')) bad('SELinux', `${w} seLinuxOptions.type ${o.type} is not allowed`);
    if (o.user || o.role) bad('SELinux', `${w} seLinuxOptions.user/role must not be set`);
  };
  seLinux(psc.seLinuxOptions, 'pod');
  for (const s of psc.sysctls || []) if (!safeSysctls.has(s.name)) bad('Sysctls', `sysctl ${s.name} is not in the safe set`);
  for (const [key, value] of Object.entries(spec.metadata?.annotations || {})) {
    if (key.startsWith('container.apparmor.security.beta.kubernetes.io/') && value !== 'runtime/default' &&
        !value.startsWith('localhost/')) bad('AppArmor', `${key}: ${value}`);
  }
  for (const [kind, c] of containers) {
    const w = `${kind} "${c.name}"`;
    const sc = c.securityContext || {};
    if (sc.windowsOptions?.hostProcess) bad('HostProcess', `${w} windowsOptions.hostProcess is true`);
    if (sc.privileged) bad('Privileged Containers', `${w} is privileged`);
    for (const cap of sc.capabilities?.add || []) {
      if (!baselineCaps.has(cap)) bad('Capabilities', `${w} adds ${cap}`);
    }
    for (const p of c.ports || []) if (p.hostPort) bad('Host Ports', `${w} uses hostPort ${p.hostPort}`);
    seLinux(sc.seLinuxOptions, w);
    if (sc.procMount && sc.procMount !== 'Default') bad('/proc Mount Type', `${w} procMount ${sc.procMount}`);
    if (sc.seccompProfile?.type === 'Unconfined') bad('Seccomp', `${w} seccompProfile.type is Unconfined`);
    if (sc.appArmorProfile && !['RuntimeDefault', 'Localhost'].includes(sc.appArmorProfile.type)) {
      bad('AppArmor', `${w} appArmorProfile.type ${sc.appArmorProfile.type}`);
    }
    if (readOnlyRoot && sc.readOnlyRootFilesystem !== true) {
      bad('Read-only root file system', `${w} securityContext.readOnlyRootFilesystem must be true`);
    }
  }
  if (!restricted) return v;

  // ---- restricted ----
  for (const vol of spec.volumes || []) {
    const type = Object.keys(vol).find((k) => k !== 'name');
    if (!restrictedVolumes.has(type)) bad('Volume Types', `volume "${vol.name}" is of type ${type}`);
  }
  const podSeccomp = ['RuntimeDefault', 'Localhost'].includes(psc.seccompProfile?.type);
  if (psc.runAsUser === 0) bad('Running as Non-root user', 'pod runAsUser is 0');
  for (const [kind, c] of containers) {
    const w = `${kind} "${c.name}"`;
    const sc = c.securityContext || {};
    if (sc.allowPrivilegeEscalation !== false) {
      bad('Privilege Escalation', `${w} securityContext.allowPrivilegeEscalation must be false`);
    }
    const nonRoot = sc.runAsNonRoot ?? psc.runAsNonRoot;
    if (nonRoot !== true) bad('Running as Non-root', `${w} runAsNonRoot must be true (container or pod)`);
    if (sc.runAsNonRoot === false) bad('Running as Non-root', `${w} sets runAsNonRoot false`);
    if (sc.runAsUser === 0) bad('Running as Non-root user', `${w} runAsUser is 0`);
    const seccomp = sc.seccompProfile?.type;
    if (seccomp ? !['RuntimeDefault', 'Localhost'].includes(seccomp) : !podSeccomp) {
      bad('Seccomp', `${w} seccompProfile.type must be RuntimeDefault or Localhost (container or pod)`);
    }
    const drop = sc.capabilities?.drop || [];
    if (!drop.includes('ALL')) bad('Capabilities', `${w} must drop ALL capabilities`);
    for (const cap of sc.capabilities?.add || []) {
      if (cap !== 'NET_BIND_SERVICE') bad('Capabilities', `${w} may add only NET_BIND_SERVICE, adds ${cap}`);
    }
  }
  return v;
}

let pods = 0;
const violations = [];
for (const doc of parseAllDocuments(readFileSync(manifestsFile, 'utf8'))) {
  const o = doc.toJSON();
  if (!o) continue;
  const spec = podSpec(o);
  if (!spec) continue;
  ++pods;
  // Annotations (AppArmor) live on the pod template's metadata.
  const meta = o.kind === 'Pod' ? o.metadata : (o.kind === 'CronJob' ? o.spec.jobTemplate.spec.template.metadata
                                                                     : o.spec.template.metadata);
  const found = check(`${o.kind}/${o.metadata?.name}`, { ...spec, metadata: meta });
  violations.push(...found);
  console.log(`${o.kind}/${o.metadata?.name}: ${found.length ? found.length + ' violation(s)' : `passes ${level}`}`);
}
if (pods === 0) violations.push('no pod template in the manifests');
for (const x of violations) console.error(x);
process.exit(violations.length ? 1 : 0);
