#!/usr/bin/env python3
"""Per-hop latencies of the announce step barrier, from the files DLIO_BARRIER_HOPS writes.

Usage: DLIO_BARRIER_HOPS=/tmp/hops (an existing folder) in the environment of the coordinator and the agents (e.g.
of tests/barrier_test.cc's TheErrorBound... test, which passes its environment on), then
    python3 bench/barrier_hops.py /tmp/hops
Every process appends "<hop> <step> <CLOCK_MONOTONIC ns> <who>" lines to <pid>.hops (base/barrier_timing.h Hop);
on one machine that is one clock, so hops of different processes subtract. Prints p50/p90/p99 of each span over the
agent-steps, the protocol's own error in planned instants (before any wake-up) and the agent-steps whose planned
end came earlier than their bound allows (the guarantee: 0). One phase per run (steps are matched by number).
"""
import collections, glob, os, sys
d = sys.argv[1]
agent = {}   # (name, step) -> {hop: ns}
coord = {}   # (name, step) -> {hop: ns}
for f in glob.glob(os.path.join(d, '*.hops')):
    lines = [l.split() for l in open(f)]
    names = {l[3] for l in lines if len(l) > 3 and l[0] in ('sent', 'recv')}
    is_agent = any(l[0] == 'announce' for l in lines)
    if is_agent:
        name = next(iter(names))
        for l in lines:
            agent.setdefault((name, int(l[1])), {})[l[0]] = int(l[2])
    else:
        for l in lines:
            if len(l) > 3:
                coord.setdefault((l[3], int(l[1])), {})[l[0]] = int(l[2])
def q(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(p * len(v)))] if v else float('nan')
spans = collections.OrderedDict((k, []) for k in [
    'announce->sending (agent: callback, message built)', 'sending->sent (agent: the gRPC Write call)',
    'announce->sent (agent Write)', 'sent->read (gRPC to OnReadDone)', 'announce->read (uplink to OnReadDone)',
    'read->locked (parse, inbox, core lock)', 'last locked->queued (fan-out position, per agent)',
    'queued->recv (downlink: write, loopback, agent reader)', 'recv->awaited (reader -> rank hand-off; only if waiting)',
    'ended-end_at (wake-up overshoot)'])
steps = sorted({s for (_, s) in agent})
for s in steps:
    names = [n for (n, st) in agent if st == s]
    c = {n: coord.get((n, s), {}) for n in names}
    a = {n: agent[(n, s)] for n in names}
    if not all('locked' in c[n] and 'read' in c[n] and 'queued' in c[n] for n in names):
        continue
    last_locked = max(c[n]['locked'] for n in names)
    for n in names:
        A, C = a[n], c[n]
        if 'sent' in A: spans['announce->sent (agent Write)'].append(A['sent'] - A['announce'])
        if 'sending' in A: spans['announce->sending (agent: callback, message built)'].append(A['sending'] - A['announce'])
        if 'sending' in A: spans['sending->sent (agent: the gRPC Write call)'].append(A['sent'] - A['sending'])
        if 'sent' in A: spans['sent->read (gRPC to OnReadDone)'].append(C['read'] - A['sent'])
        spans['announce->read (uplink to OnReadDone)'].append(C['read'] - A['announce'])
        spans['read->locked (parse, inbox, core lock)'].append(C['locked'] - C['read'])
        spans['last locked->queued (fan-out position, per agent)'].append(C['queued'] - last_locked)
        if 'recv' in A: spans['queued->recv (downlink: write, loopback, agent reader)'].append(A['recv'] - C['queued'])
        if 'awaited' in A and 'recv' in A and A['awaited'] > A['recv'] and A['compute_end'] < A['recv']:
            spans['recv->awaited (reader -> rank hand-off; only if waiting)'].append(A['awaited'] - A['recv'])
        if 'ended' in A: spans['ended-end_at (wake-up overshoot)'].append(A['ended'] - A['end_at'])
print(f"{len(steps)} steps, {len({n for n, _ in agent})} agents")
for k, v in spans.items():
    if v: print(f"{k:60s} n={len(v):4d} p50 {q(v,.5)/1e3:8.1f} us  p90 {q(v,.9)/1e3:8.1f}  p99 {q(v,.99)/1e3:8.1f}")
# The protocol's own error, in planned instants (before any wake-up): per step, the spread of the planned ends
# (end_at) across agents, and per agent-step how far its planned end lies before the slowest planned compute end,
# against its bound.
ps, early, viol, bounds = [], [], 0, []
for s in steps:
    names = [n for (n, st) in agent if st == s and 'end_at' in agent[(n, st)] and 'compute_end' in agent[(n, st)]]
    if len(names) < 2: continue
    ends = [agent[(n, s)]['end_at'] for n in names]
    slowest = max(agent[(n, s)]['compute_end'] for n in names)
    ps.append(max(ends) - min(ends))
    for n in names:
        A = agent[(n, s)]
        e = slowest - A['end_at']
        early.append(e)
        if 'bound' in A:
            bounds.append(A['bound'])
            if e > A['bound']: viol += 1
for k, v in (('planned spread of the step ends', ps), ('planned end before slowest compute end', early), ('bound', bounds)):
    if v: print(f"{k:60s} n={len(v):4d} p50 {q(v,.5)/1e3:8.1f} us  p90 {q(v,.9)/1e3:8.1f}  p99 {q(v,.99)/1e3:8.1f}  max {max(v)/1e3:8.1f}")
print("agent-steps whose planned end came earlier than their bound allows:", viol)
