#!/usr/bin/env python3
"""Median time of each segment of `gosbx exec --session S -- CMD`'s critical path, from a
system-wide perf recording (bench/sesspath/trace.sh makes it).

    segments.py PERF_SCRIPT_TEXT SUPERVISOR_PID INIT_PID

The text is `perf script -F comm,pid,tid,cpu,time,event,trace` of the events trace.sh
records. A call is found from its client's exec (sched_process_exec of a file whose
name holds "gosbx"); each later mark is the first matching event after the previous one,
so a call with a mark missing (a lost event, another client's request in between) is left
out and counted. Prints, per segment, the median and 10th/90th percentile in µs, and the
wake-ups of the three processes' threads (sched_wakeup) before the command starts and
after it exits.
"""
import re
import statistics
import sys

RX = re.compile(r'^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$')


def load(path):
    ev = []
    with open(path, errors='replace') as f:
        for line in f:
            m = RX.match(line)
            if m:
                ev.append((float(m[5]) * 1e6, m[1], int(m[2]), int(m[3]), m[6], m[7]))
    ev.sort(key=lambda e: e[0])
    return ev


def ret(e):
    v = int(e[5].split()[-1], 16)
    return v - (1 << 64) if v >= 1 << 63 else v


def arg(e, name):
    m = re.search(name + r': (0x[0-9a-f]+)', e[5])
    return int(m[1], 16) if m else None


def main():
    ev = load(sys.argv[1])
    sup, init = int(sys.argv[2]), int(sys.argv[3])
    tids = {}  # tid -> tgid
    for e in ev:
        tids[e[3]] = e[2]
    starts = [i for i, e in enumerate(ev) if e[4] == 'sched:sched_process_exec' and 'gosbx' in e[5]]
    rows, bad = [], 0
    for si in starts:
        cp = ev[si][2]
        i = si
        t = {'exec': ev[si][0]}

        def find(pred, key, start=None):
            nonlocal i
            j = i if start is None else start
            while j < len(ev):
                if pred(ev[j]):
                    i = j
                    t[key] = ev[j][0]
                    return ev[j]
                j += 1
            raise LookupError(key)

        try:
            # the execve that made it: the last sys_enter_execve of cp before its exec
            for j in range(si, max(si - 20000, 0), -1):
                if ev[j][4] == 'syscalls:sys_enter_execve' and ev[j][2] == cp:
                    t['execve'] = ev[j][0]
                    break
            find(lambda e: e[2] == cp and e[4] == 'syscalls:sys_enter_connect', 'connect')
            a = find(lambda e: e[2] == sup and e[4] == 'syscalls:sys_exit_accept4', 'accept')
            cfd = ret(a)
            find(lambda e: e[2] == sup and e[4] == 'syscalls:sys_exit_read' and ret(e) > 0, 'sup_read')
            find(lambda e: e[2] == sup and e[4] == 'syscalls:sys_enter_sendmsg' and arg(e, 'fd') == cfd, 'dispatch')
            find(lambda e: e[2] == sup and e[4] == 'syscalls:sys_enter_sendmsg' and arg(e, 'fd') != cfd, 'to_init')
            find(lambda e: e[2] == init and e[4] == 'syscalls:sys_exit_recvmsg' and ret(e) > 0, 'init_recv')
            f = find(lambda e: e[2] == init and e[4] == 'sched:sched_process_fork', 'clone')
            k = int(re.search(r'child_pid=(\d+)', f[5])[1])
            find(lambda e: e[3] == k and e[4] == 'syscalls:sys_enter_seccomp', 'seccomp')
            find(lambda e: e[3] == k and e[4] == 'syscalls:sys_exit_seccomp', 'seccomp_done')
            find(lambda e: e[3] == k and e[4] == 'sched:sched_process_exec', 'cmd_exec')
            find(lambda e: e[3] == k and e[4] == 'sched:sched_process_exit', 'cmd_exit')
            find(lambda e: e[4] == 'syscalls:sys_exit_wait4' and e[2] == init and ret(e) > 0, 'reaped')  # its pid in the sandbox's namespace
            find(lambda e: e[2] == init and e[4] in ('syscalls:sys_enter_write', 'syscalls:sys_enter_sendmsg'), 'init_report')
            find(lambda e: e[2] == sup and e[4] in ('syscalls:sys_exit_read', 'syscalls:sys_exit_recvmsg') and ret(e) > 0, 'sup_got_exit')
            find(lambda e: e[2] == sup and e[4] == 'syscalls:sys_enter_sendmsg' and arg(e, 'fd') == cfd, 'sup_reply')
            find(lambda e: e[2] == cp and e[4] == 'syscalls:sys_exit_recvmsg' and ret(e) > 0, 'client_got_exit')
            find(lambda e: e[2] == cp and e[4] == 'syscalls:sys_enter_exit_group', 'client_exit_group')
            find(lambda e: e[3] == cp and e[4] == 'sched:sched_process_exit', 'client_gone')
            find(lambda e: e[4] == 'syscalls:sys_exit_wait4' and ret(e) == cp, 'client_reaped')
        except LookupError:
            bad += 1
            continue
        if 'execve' not in t:
            bad += 1
            continue
        # wake-ups of the three processes' threads (and the command) before it starts
        # and after it exits
        pre = post = 0
        for e in ev[si - 1:i]:
            if e[4] != 'sched:sched_wakeup':
                continue
            tid = int(re.search(r' pid=(\d+)', e[5])[1])
            if tids.get(tid) not in (sup, init, cp, k):
                continue
            if t['connect'] <= e[0] < t['cmd_exec']:
                pre += 1
            elif t['cmd_exit'] <= e[0] <= t['client_reaped']:
                post += 1
        t['pre'], t['post'] = pre, post
        rows.append(t)
    order = ['execve', 'exec', 'connect', 'accept', 'sup_read', 'dispatch', 'to_init', 'init_recv', 'clone',
             'seccomp', 'seccomp_done', 'cmd_exec', 'cmd_exit', 'reaped', 'init_report', 'sup_got_exit',
             'sup_reply', 'client_got_exit', 'client_exit_group', 'client_gone', 'client_reaped']
    names = {
        'exec': 'client execve (kernel: exec of the static binary)',
        'connect': "client's Go start, inits, flags, signals, dial",
        'accept': "supervisor's accept4 returns",
        'sup_read': 'supervisor reads the request',
        'dispatch': 'supervisor: decode, policy, repo guard -> dispatch frame',
        'to_init': 'supervisor: Command/Start (cleanup, socketpair, stdio) -> request to init',
        'init_recv': "init's recvmsg returns (wake-up)",
        'clone': 'init: decode, open cwd, lookPath, plan -> clone',
        'seccomp': "child: stdio, setsid, caps, rlimits ... -> seccomp(2)",
        'seccomp_done': 'filter load (seccomp(2))',
        'cmd_exec': 'execve of the command',
        'cmd_exit': 'the command runs (/bin/true: ld.so, libc)',
        'reaped': "init's wait4 returns the command (teardown, wake-up of the reaper)",
        'init_report': 'init: exit report written',
        'sup_got_exit': "supervisor reads the exit report (wake-up)",
        'sup_reply': 'supervisor: Wait bookkeeping -> exit frame to the client',
        'client_got_exit': "client's recvmsg returns (wake-up)",
        'client_exit_group': 'client: exit_group',
        'client_gone': 'client process exits (threads torn down)',
        'client_reaped': "the caller's wait4 returns",
    }
    print('calls %d (left out: %d)' % (len(rows), bad))
    print('%-72s %8s %8s %8s' % ('segment (ends at)', 'p50 µs', 'p10', 'p90'))
    for a, b in zip(order, order[1:]):
        d = sorted(r[b] - r[a] for r in rows)
        q = statistics.quantiles(d, n=10)
        print('%-72s %8.0f %8.0f %8.0f' % (names[b], statistics.median(d), q[0], q[-1]))
    d = sorted(r['client_reaped'] - r['execve'] for r in rows)
    print('%-72s %8.0f' % ('total: client execve -> reaped', statistics.median(d)))
    d = sorted(r['client_reaped'] - r['cmd_exit'] for r in rows)
    print('%-72s %8.0f' % ('command exit -> client reaped', statistics.median(d)))
    d = sorted(r['cmd_exec'] - r['connect'] for r in rows)
    print('%-72s %8.0f' % ('connect -> command execve', statistics.median(d)))
    print('wake-ups (sched_wakeup of supervisor, init, client, command threads), median:')
    print('  connect -> command exec %d; command exit -> client reaped %d' % (
        statistics.median(r['pre'] for r in rows), statistics.median(r['post'] for r in rows)))


if __name__ == '__main__':
    main()
