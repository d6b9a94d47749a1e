#!/bin/sh
# bench/sesspath/trace.sh GOSBX SESSION [N]: records N (120) calls of
# `GOSBX exec --session SESSION -- /bin/true` system-wide with perf (sched and
# system-call tracepoints; root) and prints segments.py's table of their critical path.
# The session must be running (XDG_RUNTIME_DIR as for gosbx session). The recording
# and its text stay in a temporary directory, removed at the end.
set -eu
G=$1 S=$2 N=${3:-120}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ids=$("$G" session ls --json | python3 -c 'import json, sys
for s in json.load(sys.stdin):
    if s["name"] == sys.argv[1]: print(s["pid"], s["init-pid"])' "$S")
[ -n "$ids" ] || { echo "trace.sh: no session $S" >&2; exit 1; }
ev=sched:sched_process_exec,sched:sched_process_fork,sched:sched_process_exit,sched:sched_wakeup,sched:sched_switch
for s in execve connect accept4 sendmsg recvmsg read write wait4 seccomp clone3 clone exit_group; do
	ev=$ev,syscalls:sys_enter_$s,syscalls:sys_exit_$s
done
cat >"$tmp/loop" <<LOOP
#!/bin/sh
i=0
while [ \$i -lt $N ]; do "$G" exec --session "$S" -- /bin/true; i=\$((i + 1)); done
LOOP
chmod +x "$tmp/loop"
perf record -q -a -o "$tmp/data" -e "$ev" -- "$tmp/loop" >/dev/null 2>&1
perf script -i "$tmp/data" -F comm,pid,tid,cpu,time,event,trace >"$tmp/txt" 2>/dev/null
# shellcheck disable=SC2086 # two pids
python3 "$here/segments.py" "$tmp/txt" $ids
