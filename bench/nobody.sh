# bench/nobody.sh, sourced by bench/run.sh (issue 20, the raw init's phase 1): a caller other
# than root (uid 65534), the only caller the raw init serves yet, with three launchers of the
# same boundary: bwrap, gosbx built with -tags gosbxgoinit (the Go init, what every launch
# took before the raw init) and the default gosbx (its launches there take the raw init: a
# CLONE_VM child of the launcher that sets the sandbox up from a plan of raw system calls
# and stays pid 1). Cold start
# interleaved, and throughput. Needs G, B, WS, TMP, RAW, RUNS, WARMUP, TP_*, SPATH, SHOME, GO,
# ROOT from run.sh. Everything runs from a scratch directory nobody can read ($NB).
NB=$(mktemp -d /var/tmp/gosbx-bench-nb.XXXXXX)
nobody_cleanup() { rm -rf "$NB"; }
chmod 755 "$NB"
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -tags gosbxgoinit -ldflags "-X main.version=$VERSION-goinit" -o "$NB/gosbx" ./cmd/gosbx)
cp "$G" "$NB/gosbx-raw"
cp "$TMP/interleave" "$NB/interleave"
mkdir -p "$NB/ws" "$NB/home" "$NB/rt" "$NB/out"
chown 65534:65534 "$NB/ws" "$NB/home" "$NB/rt" "$NB/out"
chmod 700 "$NB/rt"
# nclean CMD...: CMD as uid 65534 in the same clean environment as the root rows
nclean() {
	(cd "$NB/ws" && setpriv --reuid 65534 --regid 65534 --clear-groups \
		env -i PATH="$SPATH" HOME="$NB/home" LANG=C.UTF-8 XDG_RUNTIME_DIR="$NB/rt" "$@")
}
BN=${B//$WS/$NB/ws}
BN=${BN//--tmpfs $SHOME /--tmpfs $NB/home }
GNB="$NB/gosbx exec --workspace $NB/ws --"
GRB="$NB/gosbx-raw exec --workspace $NB/ws --"
for v in "$BN" "$GNB" "$GRB"; do
	out=$(nclean $v /bin/sh -c 'echo ok') || die "as uid 65534, this does not run: $v"
	[ "$out" = ok ] || die "as uid 65534, unexpected output from: $v"
done
# the raw build's init must be the raw one (its name), the default build's the Go init
# initcomms LAUNCHER...: the comm of every process below this shell's background job while
# the launcher runs sleep 1 (the job is subshells that exec setpriv, env and the launcher)
initcomms() {
	nclean "$@" /bin/sleep 1 &
	local top=$! todo p
	sleep 0.5
	todo=$(pgrep -P "$top" || true)
	while [ -n "$todo" ]; do
		set -- $todo
		p=$1
		shift
		todo="$* $(pgrep -P "$p" || true)"
		todo=${todo# }
		cat "/proc/$p/comm" 2>/dev/null || true
	done
	wait "$top" || true
}
initcomms $GRB | grep -qx gosbx-init || die "the default build did not take the raw init for uid 65534"
initcomms $GNB | grep -qx exe || die "the -tags gosbxgoinit build did not take the Go init (an exe below the launcher) for uid 65534"
! initcomms $GNB | grep -qx gosbx-init || die "the -tags gosbxgoinit build took the raw init"

say "a caller other than root (uid 65534): bwrap, gosbx (-tags gosbxgoinit: the Go init), gosbx-raw (the default build: the raw init), $((RUNS * 5)) interleaved rounds; throughput"
nclean "$NB/interleave" -n "$((RUNS * 5))" -warmup "$WARMUP" -json bwrap="$BN /bin/true" \
	gosbx="$GNB /bin/true" gosbx-raw="$GRB /bin/true" >"$RAW/nobody-interleaved.jsonl"
seq "$TP_LAUNCHES" | sed "s|.*|/bin/true|" >"$NB/launches.txt"
XN="xargs -a $NB/launches.txt -P $TP_CALLERS -n 1"
nclean hyperfine -N --style basic --runs "$TP_RUNS" --warmup 1 --export-json "$NB/out/nobody-throughput.json" \
	-n bwrap "$XN $BN" -n gosbx "$XN $GNB" -n gosbx-raw "$XN $GRB" >&2
cp "$NB/out/nobody-throughput.json" "$RAW/nobody-throughput.json"
# resident memory while sleep 2 runs, as uid 65534 with the raw init, whose memory is the
# launcher's (one figure for both: the reaper column is the same memory)
for r in $(seq "$RSS_REPS"); do
	rss_one gosbx-raw-nobody /bin/sh -c "cd $NB/ws && exec setpriv --reuid 65534 --regid 65534 --clear-groups \
		env -i PATH=$SPATH HOME=$NB/home LANG=C.UTF-8 $GRB /bin/sleep 2"
done
