# bench/pause.sh, sourced by bench/run.sh after bench/sessions.sh (issue 20, item 5): what an
# agent's launches cost. An agent pauses between commands, and after a pause this VM starts a
# process slower than in a tight loop (cold caches, vCPUs woken up), so bwrap, gosbx, gosbx
# with a memory limit (a v1 group made, joined and removed per launch; bwrap makes none) and
# `gosbx exec --session S` (a session started for the row, stopped after) are timed, each
# run after a PAUSE_MS (500) ms idle pause, untimed (hyperfine -N --prepare 'sleep …'),
# PAUSE_RUNS (20) runs of /bin/true. The same commands back to back are in the cold-start
# and sessions rows. Needs G, B, GS, GM, WS, RAW, sclean from run.sh and sessions.sh.
PAUSE_MS=${PAUSE_MS:-500}
PAUSE_RUNS=${PAUSE_RUNS:-20}
PAUSE_S=$(awk -v m="$PAUSE_MS" 'BEGIN { printf "%.3f", m / 1000 }')
{
	echo "pause_ms=$PAUSE_MS"
	echo "pause_runs=$PAUSE_RUNS"
	echo "pause_prepare=sleep $PAUSE_S"
} >>"$RAW/meta.txt"
say "after a $PAUSE_MS ms pause: bwrap, gosbx, gosbx --memory, exec --session ($PAUSE_RUNS runs each, /bin/true)"
sclean "$G" session start pause --workspace "$WS" || die "gosbx session start pause failed"
[ "$(sclean "$G" exec --session pause -- /bin/sh -c 'echo ok')" = ok ] || die "gosbx exec --session pause does not run"
sclean hyperfine -N --style basic --runs "$PAUSE_RUNS" --warmup 2 --prepare "sleep $PAUSE_S" \
	--export-json "$RAW/pause-true.json" -n bwrap "$B /bin/true" -n gosbx "$GS /bin/true" \
	-n gosbx-mem "$GM /bin/true" -n gosbx-session "$G exec --session pause -- /bin/true" >&2
sclean "$G" session stop pause
