package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inPrivateMountNS runs script as root in a private mount namespace of the
// host (so its mounts never touch the real host), with $G... being the
// gosbx invocation of the caller (setpriv included) as "$@" after shift of
// the first argument B (the sandbox base directory). The script prints
// what the test checks. Exit 77 means the setup mounts are impossible here.
func (s *sandbox) inPrivateMountNS(script string) result {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	prefix := s.rawCommand(ctx).Args // [gosbx] or [setpriv ... -- gosbx]
	args := append([]string{"-m", "--propagation", "private", shellPath, "-c", script, "_", s.base}, prefix...)
	cmd := exec.CommandContext(ctx, "/usr/bin/unshare", args...)
	cmd.Env = s.env()
	cmd.Dir = s.base
	cmd.WaitDelay = 5 * time.Second
	r := s.runCmd(ctx, cmd)
	if r.code == 77 {
		s.t.Skipf("cannot create the test mounts here: %s", r.stderr)
	}
	return r
}

// A workspace on a nosuid,nodev,noexec tmpfs and on overlayfs (mount flags
// locked in a user namespace) works, and its .git is still read-only.
func TestWorkspaceOnLockedMounts(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, kind := range []string{"tmpfs", "overlay"} {
			s := newSandbox(t, c)
			script := fmt.Sprintf(`B=$1; shift
kind=%s; ws=$B/mnt
mkdir -p "$ws" "$B/lo" "$B/up" "$B/wk" || exit 77
if [ $kind = tmpfs ]; then
  mount -t tmpfs -o nosuid,nodev,noexec,size=64m gosbx-it "$ws" || exit 77
else
  mount -t overlay -o "lowerdir=$B/lo,upperdir=$B/up,workdir=$B/wk,nosuid,nodev" gosbx-it "$ws" || exit 77
fi
chmod 755 "$ws"; git init -q "$ws" || exit 77
chown -R %d:%d "$ws"
before=$(cat "$ws/.git/config")
"$@" exec --workspace "$ws" -- %s -c 'echo ok > "$1/f" && if (echo x >> "$1/.git/config") 2>/dev/null; then echo GIT-WRITABLE; fi' _ "$ws" </dev/null
echo "RC $?"
echo "CONTENT $(cat "$ws/f" 2>/dev/null)"
[ "$(cat "$ws/.git/config")" = "$before" ] || echo "GIT-CHANGED"`, kind, c.uid, c.gid, shellPath)
			if c.uid == 0 && kind == "overlay" {
				// overlayfs cannot be idmapped: with root_identity_map: deny a root
				// caller's launch is refused, naming the step and the path...
				pol := filepath.Join(s.base, "deny.yaml")
				if err := os.WriteFile(pol, []byte("extends: agent\nroot_identity_map: deny\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				denyScript := strings.Replace(script, `"$@" exec --workspace`, `"$@" exec --policy `+pol+` --workspace`, 1)
				r := s.inPrivateMountNS(denyScript)
				if !strings.Contains(r.stdout, "RC 125\n") || strings.Contains(r.stdout, "CONTENT ok\n") ||
					!strings.Contains(r.stderr, "idmap") || !strings.Contains(r.stderr, "/mnt") {
					t.Errorf("root, overlay workspace, root_identity_map: deny: want 125 naming idmap and the path, the command not run\n%v", r)
				}
				// ...by default (allow) the command runs as host uid 0 there, and the
				// status says so.
				allowScript := strings.Replace(script, `"$@" exec --workspace`, `"$@" exec --status-fd 3 --workspace`, 1)
				allowScript = strings.Replace(allowScript, `_ "$ws" </dev/null`, `_ "$ws" </dev/null 3>"$B/status"
cat "$B/status" >&2`, 1)
				r = s.inPrivateMountNS(allowScript)
				if !strings.Contains(r.stdout, "RC 0\n") || !strings.Contains(r.stdout, "CONTENT ok\n") ||
					!strings.Contains(r.stderr, `"identity-map":`) {
					t.Errorf("root, overlay workspace: want it run as host uid 0, the status saying so\n%v", r)
				}
				// ...and stderr too, in one line, for a caller without --status-fd
				if strings.Count(r.stderr, "gosbx: warning: the command runs as host uid 0") != 1 {
					t.Errorf("root, overlay workspace: want one warning line on stderr\n%v", r)
				}
				if strings.Contains(r.stdout, "GIT-WRITABLE") || strings.Contains(r.stdout, "GIT-CHANGED") {
					t.Errorf("%s workspace: .git is writable inside\n%v", kind, r)
				}
				continue
			}
			r := s.inPrivateMountNS(script)
			if !strings.Contains(r.stdout, "RC 0\n") || !strings.Contains(r.stdout, "CONTENT ok\n") {
				t.Errorf("%s workspace: the command failed or its write did not land\n%v", kind, r)
			}
			if strings.Contains(r.stdout, "GIT-WRITABLE") || strings.Contains(r.stdout, "GIT-CHANGED") {
				t.Errorf("%s workspace: .git is writable inside\n%v", kind, r)
			}
		}
	})
}

// Under a host /proc with masked entries (where the kernel refuses a fresh
// procfs in a user namespace), gosbx either refuses (125, command not run)
// or runs without exposing the host's processes.
func TestMaskedHostProc(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		uniq := filepath.Join(s.base, "gosbx-it-masked-sleep-"+s.id)
		must(t, os.Symlink("/usr/bin/sleep", uniq))
		host := exec.Command(uniq, "347")
		must(t, host.Start())
		defer func() { _ = host.Process.Kill(); _ = host.Wait() }()
		script := fmt.Sprintf(`B=$1; shift
for f in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug /proc/latency_stats; do [ -f "$f" ] && { mount --bind /dev/null "$f" || exit 77; }; done
mount --bind -o ro /proc/sys /proc/sys || exit 77
"$@" exec --workspace %s -- %s -c 'touch "$1/ran"; tr "\0" " " < /proc/$2/cmdline 2>/dev/null | grep -q gosbx-it-masked-sleep && echo HOST-PID-VISIBLE; ls /proc | grep -qx "$2" && echo HOST-PID-LISTED; exit 0' _ %s %d </dev/null
echo "RC $?"`, s.ws, shellPath, s.ws, host.Process.Pid)
		r := s.inPrivateMountNS(script)
		t.Logf("outcome: %s", strings.TrimSpace(r.stdout))
		_, ranErr := os.Stat(filepath.Join(s.ws, "ran"))
		switch {
		case strings.Contains(r.stdout, "RC 125\n"):
			if ranErr == nil {
				t.Errorf("exit 125 but the command ran")
			}
			if strings.TrimSpace(r.stderr) == "" {
				t.Errorf("exit 125 without a message on stderr")
			}
		case strings.Contains(r.stdout, "RC 0\n"):
			if strings.Contains(r.stdout, "HOST-PID") {
				t.Errorf("host processes visible: the host /proc was bound into the sandbox\n%v", r)
			}
			if ranErr != nil {
				t.Errorf("exit 0 but the command did not run")
			}
		default:
			t.Errorf("want exit 125 or 0\n%v", r)
		}
	})
}

// --net host with /etc/resolv.conf a symlink into /run (systemd-resolved
// style): the resolver configuration is still readable inside.
func TestNetHostResolvConfSymlink(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		marker := "gosbx-it-" + s.id
		script := fmt.Sprintf(`B=$1; shift
mkdir -p "$B/etc" && mount -t tmpfs gosbx-it-etc "$B/etc" || exit 77
cp -a /etc/. "$B/etc/" || exit 77
rm -f "$B/etc/resolv.conf"; ln -s ../run/systemd/resolve/stub-resolv.conf "$B/etc/resolv.conf"
mount --bind "$B/etc" /etc || exit 77
mount -t tmpfs gosbx-it-run /run || exit 77
mkdir -p /run/systemd/resolve && echo "nameserver 127.0.0.53 # %s" > /run/systemd/resolve/stub-resolv.conf
"$@" exec --workspace %s --net host -- cat /etc/resolv.conf </dev/null
echo "RC $?"`, marker, s.ws)
		r := s.inPrivateMountNS(script)
		if !strings.Contains(r.stdout, "RC 0\n") || !strings.Contains(r.stdout, marker) {
			t.Errorf("--net host with a symlinked resolv.conf: content not visible\n%v", r)
		}
	})
}
