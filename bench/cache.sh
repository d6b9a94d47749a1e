# bench/cache.sh, sourced by bench/run.sh (issue 19 item 2's measure): the second
# `go test -count=1` of a trivial module under `--policy build` with the workspace's cache
# (gosbx-cache: warmed by hyperfine's warmup run, which fills the cache entry) against the
# same test run directly with a warm GOCACHE of its own (direct); and the cold one,
# `--no-cache` (gosbx-nocache: the standard library rebuilt every run), beside them.
# -count=1 runs the test binary every time (no cached test result); the compiled packages
# come from the cache. The cache root is a scratch XDG_CACHE_HOME ($WORK/xdg), so nothing of
# the caller's is touched. Needs G, WORK, RAW, SPATH, SHOME from run.sh. Skipped when go is
# not installed. Knobs: CACHE_RUNS (10), COLD_GO_RUNS (3).
CACHE_RUNS=${CACHE_RUNS:-10}
COLD_GO_RUNS=${COLD_GO_RUNS:-3}
GOBIN_=$(command -v "$GO" 2>/dev/null || true)
if [ -x /usr/local/go/bin/go ] && [ -n "$GOBIN_" ]; then
	MOD=$WORK/gomod
	mkdir -p "$MOD" "$WORK/xdg" "$WORK/gocache-direct"
	chmod 0700 "$WORK/xdg"
	printf 'module example.com/benchcache\n\ngo 1.21\n' >"$MOD/go.mod"
	printf 'package m\n\nfunc Add(a, b int) int { return a + b }\n' >"$MOD/m.go"
	printf 'package m\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal("Add")\n\t}\n}\n' >"$MOD/m_test.go"
	cclean() { env -i PATH="$SPATH:/usr/local/go/bin" HOME="$SHOME" LANG=C.UTF-8 XDG_CACHE_HOME="$WORK/xdg" "$@"; }
	GB="$G exec --policy build --workspace $MOD --env GOTOOLCHAIN=local --"
	say "warm caches: the second go test -count=1 of a trivial module, direct and under build with --cache ($CACHE_RUNS runs); cold (--no-cache, $COLD_GO_RUNS runs)"
	(cd "$MOD" && cclean $GB /usr/local/go/bin/go test -count=1 . >/dev/null) || die "go test under build does not run"
	(cd "$MOD" && cclean hyperfine -N --style basic --runs "$CACHE_RUNS" --warmup 1 --export-json "$RAW/cache-go.json" \
		-n direct "env GOCACHE=$WORK/gocache-direct GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off /usr/local/go/bin/go test -count=1 ." \
		-n gosbx-cache "$GB /usr/local/go/bin/go test -count=1 ." >&2)
	(cd "$MOD" && cclean hyperfine -N --style basic --runs "$COLD_GO_RUNS" --warmup 0 --export-json "$RAW/cache-go-cold.json" \
		-n gosbx-nocache "$G exec --policy build --no-cache --workspace $MOD --env GOTOOLCHAIN=local -- /usr/local/go/bin/go test -count=1 ." >&2)
	echo "cache_runs=$CACHE_RUNS" >>"$RAW/meta.txt"
	echo "cold_go_runs=$COLD_GO_RUNS" >>"$RAW/meta.txt"
else
	say "warm caches: skipped (no go at /usr/local/go/bin/go)"
fi
