#!/usr/bin/env bash
# bench/run.sh (`make bench`): gosbx against bwrap, side by side, in one run, with the same
# boundary. See BENCHMARKS.md for what is measured and how to read the table.
#
# It builds gosbx and bench/libbench (CGO_ENABLED=0) into a temporary directory, makes a
# scratch workspace under /var/tmp, installs bwrap and hyperfine when missing (as root:
# apt-get update once, then apt-get install -y bubblewrap hyperfine), measures, prints the
# table and writes bench/results/latest.json plus the raw files in bench/results/raw/.
#
# The warm path: library-pool is bench/libbench -pool (sandboxes built ahead from an
# nsinit.Pool, the policy compiled once, each sandbox used once); for cold start it runs
# with a POOL_SIZE pool and a GAP_MS idle pause between launches (as an agent's think time),
# and bwrap-gap / gosbx-gap are bwrap and gosbx exec timed with the same idle pause
# (hyperfine --prepare 'sleep …', not timed), so that the ratios compare like with like.
#
# Knobs (environment): RUNS (cold-start runs, default 40), WARMUP (5), HEAVY_RUNS (15),
# TP_LAUNCHES (500), TP_CALLERS (8), TP_RUNS (3), LIB_N (200), RSS_REPS (3),
# STARTUP_ROUNDS (500: gosbx version against an empty Go program), SREQS (10: requests each
# of 20 sessions serves before their memory is read again), and for the warm path
# POOL_SIZE (2) and GAP_MS (20); the egress rows EG_REPS (5), EG_MB (100), EG_REQS (200)
# (bench/egress.sh); the rows after an idle pause PAUSE_MS (500) and PAUSE_RUNS (20)
# (bench/pause.sh).
# No network is used: every sandbox has its own network namespace with only lo, but the
# egress rows' direct mode (--net host), which dials 127.0.0.1 only.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RESULTS=$ROOT/bench/results
RAW=$RESULTS/raw
RUNS=${RUNS:-40}
WARMUP=${WARMUP:-5}
HEAVY_RUNS=${HEAVY_RUNS:-15}
TP_LAUNCHES=${TP_LAUNCHES:-500}
TP_CALLERS=${TP_CALLERS:-8}
TP_RUNS=${TP_RUNS:-3}
LIB_N=${LIB_N:-200}
RSS_REPS=${RSS_REPS:-3}
POOL_SIZE=${POOL_SIZE:-2}
GAP_MS=${GAP_MS:-20}
STARTUP_ROUNDS=${STARTUP_ROUNDS:-500}
GAP_S=$(awk -v m="$GAP_MS" 'BEGIN { printf "%.3f", m / 1000 }')
GO=${GO:-go}

say() { printf '\n== %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

# --- tools -------------------------------------------------------------------------------
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v hyperfine >/dev/null || missing+=(hyperfine)
[ -x /usr/bin/python3 ] || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "missing ${missing[*]}: install them (apt-get install -y ${missing[*]}) or run as root"
	say "installing ${missing[*]}"
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi
command -v "$GO" >/dev/null || die "go not found (set GO=/path/to/go)"

# --- build -------------------------------------------------------------------------------
TMP=$(mktemp -d)
WORK=$(mktemp -d /var/tmp/gosbx-bench.XXXXXX)
cleanup() {
	[ "$(type -t sessions_cleanup)" = function ] && sessions_cleanup
	[ "$(type -t egress_cleanup)" = function ] && egress_cleanup
	[ "$(type -t nobody_cleanup)" = function ] && nobody_cleanup
	rm -rf "$TMP" "$WORK"
}
trap cleanup EXIT
say "building gosbx and bench/libbench (CGO_ENABLED=0) into $TMP"
VERSION=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo devel)
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-X main.version=$VERSION" -o "$TMP/gosbx" ./cmd/gosbx)
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$TMP/libbench" ./bench/libbench)
(cd "$ROOT" && "$GO" build -o "$TMP/report" ./bench/report)
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$TMP/interleave" ./bench/interleave)
# an empty Go program (func main() {}): the Go runtime's own start, against gosbx version
printf 'package main\n\nfunc main() {}\n' >"$TMP/empty.go"
(cd "$TMP" && CGO_ENABLED=0 GOFLAGS= "$GO" build -trimpath -o "$TMP/empty" empty.go)
G=$TMP/gosbx
LIB=$TMP/libbench

# --- the scratch workspace and the shared boundary --------------------------------------
WS=$WORK/ws
mkdir -p "$WS"
NOSEC=$WORK/seccomp-none.yaml # outside the workspace: gosbx refuses a policy the command could rewrite
cat >"$NOSEC" <<'EOF'
extends: agent
description: gosbx bench, the agent boundary with seccomp profile none
seccomp:
  profile: none
EOF
"$G" policy check "$NOSEC" >/dev/null

# One clean environment for everything measured: the direct runs, bwrap and gosbx get the
# same PATH, HOME and LANG (gosbx keeps PATH/LANG and sets HOME, TMPDIR, SHELL; the bwrap
# argv sets the same five).
SPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
SHOME=${HOME:-/}
case "$SHOME" in /|/usr|/usr/*|/etc|/etc/*|/proc*|/dev*|/sys*|/run*|/tmp*|/var/tmp*) SHOME=/home/sandbox ;; esac
clean() { env -i PATH="$SPATH" HOME="$SHOME" LANG=C.UTF-8 "$@"; }

# bwrap with gosbx's default (agent) boundary, as closely as bwrap can say it.
BWRAP=(bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL --hostname gosbx
	--ro-bind /usr /usr)
for d in bin sbin lib lib32 lib64 libx32; do
	if [ -L "/$d" ]; then
		BWRAP+=(--symlink "$(readlink "/$d")" "/$d")
	elif [ -d "/$d" ]; then
		BWRAP+=(--ro-bind "/$d" "/$d")
	fi
done
BWRAP+=(--ro-bind /etc /etc)
if [ -L /etc/resolv.conf ]; then
	rc=$(readlink -f /etc/resolv.conf)
	case "$rc" in /run/*) [ -e "$rc" ] && BWRAP+=(--ro-bind "$rc" "$rc") ;; esac
fi
BWRAP+=(--proc /proc --dev /dev --tmpfs /dev/shm --tmpfs /tmp --tmpfs /var/tmp --tmpfs /run
	--tmpfs "$SHOME" --bind "$WS" "$WS" --remount-ro / --chdir "$WS"
	--clearenv --setenv PATH "$SPATH" --setenv HOME "$SHOME" --setenv LANG C.UTF-8
	--setenv TMPDIR /tmp --setenv SHELL /bin/sh)
for a in "${BWRAP[@]}"; do
	case "$a" in *[[:space:]]*) die "a path with white space cannot go through hyperfine -N here: $a" ;; esac
done
B="${BWRAP[*]}"
# The same bwrap with gosbx's own agent filter (gosbx seccomp export; bwrap --seccomp FD):
# a filter on both. hyperfine closes inherited descriptors, so a /bin/sh script opens it;
# the script's own cost is measured as "sh-exec" (the same script without bwrap).
"$G" seccomp export --format bpf >"$WORK/agent.bpf"
printf '#!/bin/sh\nexec %s --seccomp 3 "$@" 3<%s\n' "$B" "$WORK/agent.bpf" >"$WORK/bwrap-filter"
printf '#!/bin/sh\nexec "$@" 3<%s\n' "$WORK/agent.bpf" >"$WORK/sh-exec"
chmod +x "$WORK/bwrap-filter" "$WORK/sh-exec"
BF=$WORK/bwrap-filter
GS="$G exec --workspace $WS --"
GN="$G exec --policy $NOSEC --workspace $WS --"
# gosbx-mem: with a memory limit, so a cgroup (v1 here) is made, joined and removed per
# launch; a root caller's default launch has none (its process limit is RLIMIT_NPROC)
GM="$G exec --memory 512M --workspace $WS --"
cd "$WS"

# Check that every variant runs before timing anything.
for v in "$B" "$BF" "$GS" "$GN" "$GM"; do
	out=$(clean $v /bin/sh -c 'echo ok') || die "this does not run: $v"
	[ "$out" = ok ] || die "unexpected output from: $v"
done
[ "$(clean $GS grep -c '^Seccomp:.*2' /proc/self/status)" = 1 ] || die "gosbx: no seccomp filter?"
[ "$(clean $B grep -c '^Seccomp:.*0' /proc/self/status)" = 1 ] || die "bwrap: unexpected seccomp filter"
[ "$(clean $BF grep -c '^Seccomp:.*2' /proc/self/status)" = 1 ] || die "bwrap --seccomp: no filter?"
# gosbx-mem's command is in a group with the 512M limit (v1 memory.limit_in_bytes, v2 memory.max)
clean $GM /bin/sh -c 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max 2>/dev/null; true' |
	grep -x 536870912 >/dev/null || die "gosbx --memory 512M: no group with that limit inside?"

rm -rf "$RAW"
mkdir -p "$RAW"
cgmode=legacy
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then cgmode=unified
elif [ -d /sys/fs/cgroup/unified ]; then cgmode=hybrid; fi
{
	echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "gosbx_version=$VERSION"
	echo "go_version=$("$GO" env GOVERSION)"
	echo "kernel=$(uname -r)"
	echo "nproc=$(nproc)"
	echo "cpu=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/.*: //')"
	echo "mem_total_kib=$(awk '/^MemTotal/{print $2}' /proc/meminfo)"
	echo "cgroup_mode=$cgmode"
	echo "uid=$(id -u)"
	echo "bwrap_version=$(bwrap --version)"
	echo "hyperfine_version=$(hyperfine --version)"
	echo "python_version=$(/usr/bin/python3 --version 2>&1)"
	echo "gosbx_binary_bytes=$(stat -c %s "$G")"
	echo "libbench_binary_bytes=$(stat -c %s "$LIB")"
	echo "seccomp_agent_instructions=$("$G" seccomp export --format text | grep -c .)"
	echo "seccomp_none_instructions=$("$G" seccomp export --policy "$NOSEC" --format text | grep -c .)"
	echo "workspace=$WS"
	echo "bwrap_argv=$B"
	echo "bwrap_filter_argv=$(sed -n 2p "$BF")"
	echo "gosbx_argv=$GS"
	echo "gosbx_none_argv=$GN"
	echo "gosbx_mem_argv=$GM"
	echo "runs=$RUNS"
	echo "warmup=$WARMUP"
	echo "heavy_runs=$HEAVY_RUNS"
	echo "tp_launches=$TP_LAUNCHES"
	echo "tp_callers=$TP_CALLERS"
	echo "tp_runs=$TP_RUNS"
	echo "lib_n=$LIB_N"
	echo "rss_reps=$RSS_REPS"
	echo "pool_size=$POOL_SIZE"
	echo "gap_ms=$GAP_MS"
	echo "startup_rounds=$STARTUP_ROUNDS"
	echo "gap_prepare=sleep $GAP_S"
	echo "eg_reps=${EG_REPS:-5}"
	echo "eg_mb=${EG_MB:-100}"
	echo "eg_reqs=${EG_REQS:-200}"
} >"$RAW/meta.txt"

hf() { # hf NAME RUNS WARMUP CMD [hyperfine args]: direct, bwrap, bwrap-filter, gosbx, gosbx-none
	local name=$1 runs=$2 warm=$3 cmd=$4
	shift 4
	clean hyperfine -N --style basic --runs "$runs" --warmup "$warm" --export-json "$RAW/$name.json" \
		-n direct "$cmd" -n bwrap "$B $cmd" -n bwrap-filter "$BF $cmd" \
		-n gosbx "$GS $cmd" -n gosbx-none "$GN $cmd" "$@" >&2
}

# --- the start of the binary: gosbx version against an empty Go program -------------------
# Interleaved (bench/interleave: each round starts each once, so that the VM's drift slows
# both alike), STARTUP_ROUNDS rounds; hyperfine -N beside it.
say "start of the binary: gosbx version against an empty Go program ($STARTUP_ROUNDS interleaved rounds)"
clean "$TMP/interleave" -n "$STARTUP_ROUNDS" -warmup 20 -json empty="$TMP/empty" version="$G version" >"$RAW/startup.jsonl"
clean hyperfine -N --style basic --runs "$STARTUP_ROUNDS" --warmup 20 --export-json "$RAW/startup.json" \
	-n empty "$TMP/empty" -n version "$G version" >&2

# --- cold start --------------------------------------------------------------------------
say "cold start ($RUNS runs, $WARMUP warmup each)"
hf cold-true "$RUNS" "$WARMUP" "/bin/true" -n gosbx-mem "$GM /bin/true" -n sh-exec "$WORK/sh-exec /bin/true"
# bwrap and gosbx interleaved (bench/interleave), RUNS*5 rounds: the VM's drift and the
# other loads of a shared machine slow both alike
clean "$TMP/interleave" -n "$((RUNS * 5))" -warmup "$WARMUP" -json bwrap="$B /bin/true" gosbx="$GS /bin/true" \
	>"$RAW/cold-true-interleaved.jsonl"
hf cold-sh "$RUNS" "$WARMUP" "/bin/sh -c 'echo hi'" -n gosbx-mem "$GM /bin/sh -c 'echo hi'"
hf cold-python "$RUNS" "$WARMUP" "/usr/bin/python3 -c pass" -n gosbx-mem "$GM /usr/bin/python3 -c pass"
# CPU per launch, every process of it: hyperfine's user and system are the launcher's
# rusage, which counts only the children it waited for, and neither bwrap nor gosbx waits
# for its sandbox's pid 1 (both return once pid 1 reports the command's exit); as a child
# subreaper, bench/interleave -cpu reaps those too and adds their rusage
clean "$TMP/interleave" -cpu -n "$RUNS" -warmup "$WARMUP" -json bwrap="$B /bin/true" gosbx="$GS /bin/true" \
	gosbx-none="$GN /bin/true" gosbx-mem="$GM /bin/true" >"$RAW/cpu-true.jsonl"
clean "$LIB" -workspace "$WS" -n "$LIB_N" -label library -json "$RAW/lib-true.json" -- /bin/true
clean "$LIB" -workspace "$WS" -policy "$NOSEC" -n "$LIB_N" -label library-none -json "$RAW/lib-true-none.json" -- /bin/true

# The warm path: a pool of POOL_SIZE sandboxes built ahead, GAP_MS idle between launches
# (not timed); bwrap and gosbx timed with the same idle pause before each run.
say "cold start after a $GAP_MS ms idle gap: bwrap-gap, gosbx-gap ($RUNS runs), library-pool (pool $POOL_SIZE, $LIB_N launches)"
hfgap() { # hfgap NAME CMD: bwrap-gap and gosbx-gap, each run after sleep GAP_S (untimed)
	clean hyperfine -N --style basic --runs "$RUNS" --warmup "$WARMUP" --prepare "sleep $GAP_S" \
		--export-json "$RAW/$1.json" -n bwrap-gap "$B $2" -n gosbx-gap "$GS $2" >&2
}
hfgap cold-true-gap "/bin/true"
hfgap cold-sh-gap "/bin/sh -c 'echo hi'"
clean "$LIB" -workspace "$WS" -n "$LIB_N" -pool "$POOL_SIZE" -gap "${GAP_MS}ms" -label library-pool \
	-json "$RAW/lib-true-pool.json" -- /bin/true
clean "$LIB" -workspace "$WS" -n "$LIB_N" -pool "$POOL_SIZE" -gap "${GAP_MS}ms" -label library-pool \
	-json "$RAW/lib-sh-pool.json" -- /bin/sh -c 'echo hi'

# --- throughput --------------------------------------------------------------------------
say "throughput: $TP_LAUNCHES launches of /bin/true from $TP_CALLERS callers (xargs -P), $TP_RUNS runs"
seq "$TP_LAUNCHES" | sed "s|.*|/bin/true|" >"$WORK/launches.txt"
X="xargs -a $WORK/launches.txt -P $TP_CALLERS -n 1"
clean hyperfine -N --style basic --runs "$TP_RUNS" --warmup 1 --export-json "$RAW/throughput.json" \
	-n direct "$X" -n bwrap "$X $B" -n bwrap-filter "$X $BF" -n gosbx "$X $GS" -n gosbx-none "$X $GN" >&2
clean "$LIB" -workspace "$WS" -n "$TP_LAUNCHES" -P "$TP_CALLERS" -label library-P$TP_CALLERS -json "$RAW/lib-throughput.json" -- /bin/true
clean "$LIB" -workspace "$WS" -n "$TP_LAUNCHES" -P "$TP_CALLERS" -pool "$TP_CALLERS" -label library-pool-P$TP_CALLERS \
	-json "$RAW/lib-throughput-pool.json" -- /bin/true

# --- syscall-heavy: the seccomp filter's cost --------------------------------------------
say "syscall-heavy ($HEAVY_RUNS runs each)"
hf heavy-find "$HEAVY_RUNS" 2 "/bin/sh -c 'find /usr -type f | wc -l'"
hf heavy-stat "$HEAVY_RUNS" 2 "/usr/bin/python3 -c 'import os, sys; st, p = os.stat, sys.prefix; [st(p) for _ in range(300000)]'"

# --- resident memory while `sleep 2` runs -------------------------------------------------
say "resident memory (VmRSS, Pss, USS, Anonymous) of the launcher, the reaper and the command, $RSS_REPS reps"
kib() { # kib PID FIELD: a /proc/PID/status (VmRSS) or smaps_rollup (Pss) value in KiB
	local f=status
	[ "$2" = Pss ] && f=smaps_rollup
	awk -v k="$2:" '$1 == k {print $2; exit}' "/proc/$1/$f" 2>/dev/null || echo 0
}
# uss PID: unique memory (Private_Clean + Private_Dirty of smaps_rollup), KiB
uss() { awk '/^Private_(Clean|Dirty):/ {s += $2} END {print s + 0}' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0; }
# anon PID: private anonymous memory (Anonymous of smaps_rollup: heap, stacks, written
# .data/.bss), KiB. USS less this is file pages (mostly the binary's code and read-only
# data) only this process maps: clean page cache, shared as soon as a second process of
# the binary maps them, reclaimable either way
anon() { awk '$1 == "Anonymous:" {print $2; exit}' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0; }
child() { pgrep -P "$1" | head -n 1; }
# sleepchild PID: the child of PID running sleep (the sandbox's init has two children: the
# commands' pid 1, the holder, and the command itself)
sleepchild() {
	local c
	for c in $(pgrep -P "$1"); do
		[ "$(cat "/proc/$c/comm" 2>/dev/null)" = sleep ] && { echo "$c"; return; }
	done
}
rss_one() { # rss_one LABEL CMD...: start CMD (which runs sleep 2), read its tree, wait
	local label=$1
	shift
	env -i PATH="$SPATH" HOME="$SHOME" LANG=C.UTF-8 "$@" &
	local top=$! launcher reaper cmd i
	launcher=$top # env(1) execs: $! is the launcher itself
	reaper= cmd=
	for i in $(seq 150); do
		reaper=$(child "$launcher" || true)
		[ -n "$reaper" ] && cmd=$(sleepchild "$reaper" || true)
		[ -n "$cmd" ] && [ "$(cat "/proc/$cmd/comm" 2>/dev/null)" = sleep ] && break
		sleep 0.01
	done
	[ -n "$cmd" ] || die "$label: no command process found under $launcher"
	sleep 0.5
	printf '{"label":"%s","launcher_pid":%d,"reaper_pid":%d,"command_pid":%d,"launcher_rss_kib":%d,"reaper_rss_kib":%d,"command_rss_kib":%d,"launcher_pss_kib":%d,"reaper_pss_kib":%d,"command_pss_kib":%d,"launcher_uss_kib":%d,"reaper_uss_kib":%d,"launcher_anon_kib":%d,"reaper_anon_kib":%d,"launcher_comm":"%s","reaper_comm":"%s"}\n' \
		"$label" "$launcher" "$reaper" "$cmd" \
		"$(kib "$launcher" VmRSS)" "$(kib "$reaper" VmRSS)" "$(kib "$cmd" VmRSS)" \
		"$(kib "$launcher" Pss)" "$(kib "$reaper" Pss)" "$(kib "$cmd" Pss)" \
		"$(uss "$launcher")" "$(uss "$reaper")" "$(anon "$launcher")" "$(anon "$reaper")" \
		"$(cat "/proc/$launcher/comm")" "$(cat "/proc/$reaper/comm")" >>"$RAW/rss.jsonl"
	wait "$top" || die "$label: the sleep 2 run failed"
}
: >"$RAW/rss.jsonl"
for r in $(seq "$RSS_REPS"); do
	rss_one bwrap $B /bin/sleep 2
	rss_one gosbx $GS /bin/sleep 2
	rss_one gosbx-none $GN /bin/sleep 2
	rss_one library "$LIB" -workspace "$WS" -n 1 -warmup 0 -label rss -- /bin/sleep 2
done

# --- a caller other than root: the Go init against the raw init (issue 20) ----------------
# shellcheck source=bench/nobody.sh
. "$ROOT/bench/nobody.sh"

# --- sessions (issue 16) -----------------------------------------------------------------
# shellcheck source=bench/sessions.sh
. "$ROOT/bench/sessions.sh"

# --- after an idle pause, with a memory limit (issue 20, item 5) -------------------------
# shellcheck source=bench/pause.sh
. "$ROOT/bench/pause.sh"

# --- egress (issue 17) -------------------------------------------------------------------
# shellcheck source=bench/egress.sh
. "$ROOT/bench/egress.sh"

# --- warm caches (issue 19) --------------------------------------------------------------
# shellcheck source=bench/cache.sh
. "$ROOT/bench/cache.sh"

# --- report ------------------------------------------------------------------------------
say "report"
"$TMP/report" -raw "$RAW" -out "$RESULTS/latest.json" -markdown "$RESULTS/latest.md"
