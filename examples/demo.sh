#!/usr/bin/env bash
# The main job of gosbx on real tools: an agent-style script in a scratch workspace uses
# git, python3 (with multiprocessing) and a pipeline over /usr, then tries to escape.
# Usage: examples/demo.sh [path/to/gosbx]      (make demo builds it first)
set -u
G=$(realpath "${1:-bin/gosbx}")
[ -x "$G" ] || { echo "no gosbx binary at $G (run: make build)"; exit 2; }
base=$(mktemp -d /var/tmp/gosbx-demo.XXXXXX); chmod 755 "$base"
trap 'kill $srv 2>/dev/null; rm -rf "$base"' EXIT
ws=$base/project; mkdir "$ws"
echo "host secret: do not leak" > "$base/secret.txt"   # a sibling of the workspace, never mounted
# a server on the host's loopback, to show the sandbox cannot reach it
python3 -m http.server --bind 127.0.0.1 0 >"$base/http.log" 2>&1 & srv=$!
for _ in $(seq 50); do port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$base/http.log" | head -1); [ -n "$port" ] && break; sleep 0.1; done

cat > "$ws/agent.sh" <<'SH'
set -u
say() { printf '\n== %s\n' "$*"; }
say "git: init, add, commit (no dubious-ownership complaint)"
git init -q . && git config user.email agent@example.com && git config user.name agent
echo 'print("hello from the sandbox")' > hello.py
git add hello.py && git commit -qm "first commit" && git log --oneline
say "python3: stdlib imports and multiprocessing (needs /dev/shm)"
python3 - <<'PY'
import json, hashlib, multiprocessing as mp, sqlite3
def square(x): return x * x
with mp.Pool(2) as p: print("squares", p.map(square, range(6)))
print("sha256", hashlib.sha256(b"gosbx").hexdigest()[:16], json.dumps({"ok": True}))
PY
say "a pipeline over /usr (read-only)"
find /usr/bin -maxdepth 1 -type f | wc -l | xargs echo "files in /usr/bin:"
SH
cat > "$ws/escape.sh" <<'SH'
set -u
try() { desc=$1; shift; if "$@" >/dev/null 2>&1; then echo "ALLOWED  $desc"; else echo "denied   $desc"; fi; }
try "write / (the root is a read-only tmpfs)"  sh -c 'echo x > /escaped.txt'
try "write /usr/bin/evil"                      sh -c 'echo x > /usr/bin/evil'
try "append to /etc/passwd"                    sh -c 'echo x >> /etc/passwd'
try "rewrite the repository metadata .git/config" sh -c 'echo x >> .git/config'
try "read the host file $1/secret.txt"         cat "$1/secret.txt"
try "reach the host's loopback port $2"        python3 -c "import socket; socket.create_connection(('127.0.0.1', $2), timeout=2)"
try "resolve and reach example.com:443"        python3 -c "import socket; socket.create_connection(('example.com', 443), timeout=2)"
try "see host processes"                       sh -c '[ "$(ls -d /proc/[0-9]* | wc -l)" -gt 10 ]'
try "write beside the workspace ($1/escaped.txt)" sh -c "echo x > '$1/escaped.txt'"
(echo x > /var/tmp/gosbx-demo-escaped.txt) 2>/dev/null && echo "wrote /var/tmp/gosbx-demo-escaped.txt: /var/tmp inside is a private tmpfs (see the host check below)"
echo "capabilities: $(grep CapEff /proc/self/status | tr -s '\t' ' ')"
SH

echo "workspace: $ws"
echo "\$ gosbx exec --workspace $ws -- bash agent.sh"
( cd "$ws" && "$G" exec --workspace "$ws" -- bash agent.sh ); rc=$?
echo "gosbx exit status: $rc"
echo
echo "== a second run tries to escape (the .git made by the first run is now protected):"
echo "\$ gosbx exec --workspace $ws -- bash escape.sh $base $port"
( cd "$ws" && "$G" exec --workspace "$ws" -- bash escape.sh "$base" "$port" ); rc2=$?
echo "gosbx exit status: $rc2"
echo "on the host afterwards:"
echo "  commit in the workspace repo: $(git -C "$ws" log --oneline 2>/dev/null | head -1)"
[ -e "$base/escaped.txt" ] && echo "  ESCAPED: $base/escaped.txt exists" || echo "  $base/escaped.txt does not exist"
[ -e /escaped.txt ] && echo "  ESCAPED: /escaped.txt exists" || echo "  /escaped.txt does not exist"
[ -e /var/tmp/gosbx-demo-escaped.txt ] && echo "  ESCAPED: /var/tmp/gosbx-demo-escaped.txt exists" || echo "  /var/tmp/gosbx-demo-escaped.txt does not exist"
grep -q '^x$' "$ws/.git/config" && echo "  ESCAPED: .git/config was changed" || echo "  .git/config is unchanged"
[ $rc -eq 0 ] && [ $rc2 -eq 0 ]
