# bench/egress.sh, sourced by bench/run.sh (issue 17's measures): a download of EG_MB MiB
# over plain HTTP and over HTTPS, and EG_REQS small HTTPS requests each on a new
# connection, from a local server on 127.0.0.1 (bench/egressbench serve), timed by the
# client inside the sandbox (bench/egressbench get), in three modes, interleaved, EG_REPS
# times: direct (--net host, the client dials 127.0.0.1), proxy (--net proxy, through the
# proxy variables) and capture (--net proxy, the variables ignored: the DNS stub's answer
# and gosbx's capture on the named ports). gosbx is built with -tags gosbxtestnet here so
# that its proxy maps bench.test to 127.0.0.1 ($GOSBX_TEST_HOSTS) and dials loopback only.
# Knobs: EG_REPS (5), EG_MB (100), EG_REQS (200). Needs TMP, WORK, RAW, WS, SPATH, SHOME,
# GO, ROOT from run.sh.
EG_REPS=${EG_REPS:-5}
EG_MB=${EG_MB:-100}
EG_REQS=${EG_REQS:-200}
say "egress: $EG_MB MiB over http and https, $EG_REQS new https connections; direct, proxy, capture; $EG_REPS reps"
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -tags gosbxtestnet -o "$TMP/gosbx-testnet" ./cmd/gosbx)
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$TMP/egressbench" ./bench/egressbench)
EGD=$WORK/egress
mkdir -p "$EGD"
cp "$TMP/egressbench" "$EGD/egressbench"
"$EGD/egressbench" serve -dir "$EGD" &
EG_SERVER=$!
egress_cleanup() { kill "$EG_SERVER" 2>/dev/null || true; }
for _ in $(seq 200); do [ -s "$EGD/ports" ] && break; sleep 0.01; done
[ -s "$EGD/ports" ] || die "egressbench serve did not start"
read -r EG_HP EG_SP <"$EGD/ports"
EG_ARGS=(--ro "$EGD/egressbench" --ro "$EGD/ca.pem" --workspace "$WS")
EG_ALLOW=(--allow-host "bench.test:$EG_HP" --allow-host "bench.test:$EG_SP" --allow-host "127.0.0.1:$EG_HP" --allow-host "127.0.0.1:$EG_SP")
eg_get() { # eg_get MODE: one run of the client in that mode, its lines appended to egress.jsonl
	local net=(--net host)
	[ "$1" = direct ] || net=(--net proxy "${EG_ALLOW[@]}")
	env -i PATH="$SPATH" HOME="$SHOME" LANG=C.UTF-8 GOSBX_TEST_HOSTS=bench.test=127.0.0.1 \
		"$TMP/gosbx-testnet" exec "${net[@]}" "${EG_ARGS[@]}" -- "$EGD/egressbench" get -mode "$1" -ca "$EGD/ca.pem" \
		-http "$EG_HP" -https "$EG_SP" -mb "$EG_MB" -n "$EG_REQS" >>"$RAW/egress.jsonl" || die "egressbench get -mode $1 failed"
}
: >"$RAW/egress.jsonl"
for m in direct proxy capture; do eg_get "$m"; done # warm-up, not kept
: >"$RAW/egress.jsonl"
for _ in $(seq "$EG_REPS"); do
	for m in direct proxy capture; do eg_get "$m"; done
done
egress_cleanup
