# bench/sessions.sh, sourced by bench/run.sh (issue 16's measures): a whole
# `gosbx exec --session S -- /bin/true` call against bwrap's cold start of the same
# boundary and gosbx exec, in one hyperfine run; `session start` against gosbx exec; the
# unique memory (USS: Private_Clean + Private_Dirty of smaps_rollup), and the private
# anonymous part of it (Anonymous: heap, stacks; the rest is the binary's pages only these
# processes map), of what a session keeps alive on the host (supervisor, init, the commands' pid 1), for 1 and 20 idle
# sessions, and for the 20 once each has served SREQS (10) `exec --session` requests.
# Needs G, B, GS, WS, WORK, RAW, RUNS, WARMUP, SPATH, SHOME from run.sh.
# The sessions' runtime directory is a scratch one ($WORK/rt), so nothing of the caller's
# is touched.
SRT=$WORK/rt
SREQS=${SREQS:-10}
mkdir -p "$SRT" && chmod 0700 "$SRT"
sclean() { env -i PATH="$SPATH" HOME="$SHOME" LANG=C.UTF-8 XDG_RUNTIME_DIR="$SRT" "$@"; }
sessions_cleanup() {
	local n
	for n in $(sclean "$G" session ls --json 2>/dev/null | sed -n 's/.*"name": "\([^"]*\)".*/\1/p'); do
		sclean "$G" session kill "$n" >/dev/null 2>&1 || true
	done
}
# uss_anon_kib PID: "USS Anonymous" of PID, KiB
uss_anon_kib() {
	awk '/^Private_(Clean|Dirty):/ {s += $2} $1 == "Anonymous:" {a = $2} END {print s + 0, a + 0}' \
		"/proc/$1/smaps_rollup" 2>/dev/null || echo 0 0
}
# session_mem: `"uss_kib":U,"anon_kib":A`, the USS and Anonymous of every process the
# sessions keep on the host, KiB, summed
session_mem() {
	local sum=0 asum=0 sup init p u a
	while read -r sup init; do
		for p in "$sup" "$init" $(cat /proc/"$init"/task/*/children 2>/dev/null); do
			read -r u a < <(uss_anon_kib "$p")
			sum=$((sum + u)) asum=$((asum + a))
		done
	done < <(sclean "$G" session ls --json | /usr/bin/python3 -c 'import json, sys
for s in json.load(sys.stdin): print(s["pid"], s["init-pid"])')
	printf '"uss_kib":%d,"anon_kib":%d' "$sum" "$asum"
}

say "sessions: exec --session /bin/true against bwrap and gosbx exec ($RUNS runs); session start; idle memory of 1 and 20 sessions"
sclean "$G" session start bench --workspace "$WS" || die "gosbx session start failed"
[ "$(sclean "$G" exec --session bench -- /bin/sh -c 'echo ok')" = ok ] || die "gosbx exec --session does not run"
sclean hyperfine -N --style basic --runs "$RUNS" --warmup "$WARMUP" --export-json "$RAW/session-true.json" \
	-n bwrap "$B /bin/true" -n gosbx-session "$G exec --session bench -- /bin/true" -n gosbx "$GS /bin/true" >&2
# the same three interleaved (bench/interleave: each round runs each once), so that a
# load spike on this shared machine slows all three alike
sclean "$TMP/interleave" -n "$((RUNS * 5))" -warmup "$WARMUP" -json bwrap="$B /bin/true" \
	gosbx-session="$G exec --session bench -- /bin/true" gosbx="$GS /bin/true" >"$RAW/session-true-interleaved.jsonl"
sclean "$G" session stop bench
printf '#!/bin/sh\n%s session kill bench-start >/dev/null 2>&1\nexit 0\n' "$G" >"$WORK/session-kill"
chmod +x "$WORK/session-kill"
sclean hyperfine -N --style basic -i --runs "$RUNS" --warmup "$WARMUP" --prepare "$WORK/session-kill" \
	--export-json "$RAW/session-start.json" -n session-start "$G session start bench-start --workspace $WS" \
	-n gosbx "$GS /bin/true" >&2
sclean "$WORK/session-kill" || true
: >"$RAW/session-memory.jsonl"
for n in 1 20; do
	for i in $(seq "$n"); do sclean "$G" session start "mem$i" --workspace "$WS" || die "session start mem$i"; done
	sleep 1 # idle: the launch's garbage collected by the runtimes' background work
	printf '{"sessions":%d,%s}\n' "$n" "$(session_mem)" >>"$RAW/session-memory.jsonl"
	if [ "$n" = 20 ]; then
		# the same sessions once each has served SREQS requests, then idled 1 s (a
		# session's supervisor and init trim their heap once idle: internal/memtrim)
		for i in $(seq "$n"); do
			for _ in $(seq "$SREQS"); do sclean "$G" exec --session "mem$i" -- /bin/true || die "exec --session mem$i"; done
		done
		sleep 1
		printf '{"sessions":%d,"requests":%d,%s}\n' "$n" "$SREQS" "$(session_mem)" >>"$RAW/session-memory.jsonl"
	fi
	sessions_cleanup
done
