package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// In a container-like mount namespace where the host's / shows only as a bind at
// /host (the container's own / a tmpfs, /usr and /etc overlays of the host's: no other
// mount of the host's disk), a workspace at /host or /host/etc is refused by its place
// in that file system, and the host is not written; a project directory under /host
// is still taken (attack review 15 F6).
func TestWorkspaceHostRootPlaceRefused(t *testing.T) {
	var rst, bst syscall.Stat_t
	must(t, syscall.Stat("/", &rst))
	must(t, syscall.Stat("/var/tmp", &bst))
	if rst.Dev != bst.Dev {
		t.Skip("/var/tmp is not on the root file system: /host would not show the test's files")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		okws := filepath.Join(s.base, "okws")
		must(t, os.Mkdir(okws, 0o755))
		s.chown(okws)
		ctx := s.limitCtx(runLimit)
		var g []string
		for _, a := range s.rawCommand(ctx).Args {
			if a == gosbxBin {
				a = "/gosbx" // a copy inside the container's root
			}
			g = append(g, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
		}
		G := strings.Join(g, " ")
		script := fmt.Sprintf(`B=$1; R=$B/ctr; O=$B/ovl
mkdir -p "$R" "$O" || exit 77
mount -t tmpfs gosbx-it "$R" && mount -t tmpfs gosbx-it "$O" || exit 77
mkdir -p "$R/usr" "$R/etc" "$R/proc" "$R/dev" "$R/sys" "$R/tmp" "$R/run" "$R/host" "$R/oldroot"
for d in usr etc; do mkdir -p "$O/$d-u" "$O/$d-w"; mount -t overlay gosbx-it -o "lowerdir=/$d,upperdir=$O/$d-u,workdir=$O/$d-w" "$R/$d" || exit 77; done
for l in bin lib lib64 sbin; do ln -s usr/$l "$R/$l"; done
mount --rbind /dev "$R/dev" && mount --rbind /sys "$R/sys" || exit 77
mount -t tmpfs gosbx-it "$R/tmp" && mount -t tmpfs gosbx-it "$R/run" && chmod 1777 "$R/tmp" || exit 77
mount --bind / "$R/host" || exit 77
cp %s "$R/gosbx" && chmod 755 "$R/gosbx" || exit 77
cd "$R" && pivot_root . oldroot || exit 77
cd / && mount -t proc proc /proc && umount -l /oldroot || exit 77
echo "DISK-MOUNTS $(grep -c " $(mountpoint -d /host) " /proc/self/mountinfo)"
cd /tmp
run() { name=$1; shift; HOME=/tmp %s "$@" </dev/null >"/tmp/out-$name" 2>&1; echo "CASE $name RC $? $(tr '\n' ' ' < "/tmp/out-$name")"; }
run top exec --workspace /host -- /bin/touch "/host$B/probe-top"
run etc exec --workspace /host/etc -- /bin/true
run allowed exec --workspace "/host$B/okws" -- /bin/touch "/host$B/okws/probe-allowed"
`, gosbxBin, G)
		cmd := exec.CommandContext(ctx, "/usr/bin/unshare", "-m", "--propagation", "private", shellPath, "-c", script, "_", s.base)
		cmd.Env = s.env()
		cmd.Dir = s.base
		cmd.WaitDelay = 5 * time.Second
		r := s.runCmd(ctx, cmd)
		t.Logf("in the container: %s", r.stdout)
		if !strings.Contains(r.stdout, "DISK-MOUNTS 1\n") {
			t.Fatalf("the host's disk shows in more than /host (the case needs it alone):\n%v", r)
		}
		if r.code == 77 {
			t.Skipf("cannot create the container's mounts here: %s", r.stderr)
		}
		got := map[string]string{}
		for _, l := range strings.Split(r.stdout, "\n") {
			if rest, ok := strings.CutPrefix(l, "CASE "); ok {
				name, out, _ := strings.Cut(rest, " ")
				got[name] = out
			}
		}
		for _, name := range []string{"top", "etc"} {
			if out := got[name]; !strings.HasPrefix(out, "RC 125 ") || !strings.Contains(out, "refusing") || !strings.Contains(out, "of device") {
				t.Errorf("case %s: want 125 refusing the place, got: %q\n%v", name, out, r)
			}
		}
		if _, err := os.Lstat(filepath.Join(s.base, "probe-top")); err == nil {
			t.Errorf("the command wrote the host through /host, the bind of its /")
		}
		if out := got["allowed"]; !strings.HasPrefix(out, "RC 0 ") {
			t.Errorf("a project directory under /host refused: %q\n%v", out, r)
		}
		if _, err := os.Lstat(filepath.Join(okws, "probe-allowed")); err != nil {
			t.Errorf("the allowed workspace's probe is missing: %v\n%v", err, r)
		}
	})
}

// The same container layout with only subdirectories of the host's disk bound (as a
// Kubernetes hostPath of /etc is: mountinfo root field /etc, no mount shows the disk's
// top): a workspace at /hostetc or /hostroot is refused by its place (/etc, /root) and
// the host's /etc is not written; a bind of a project directory stays a workspace
// (attack review 16 F4).
func TestWorkspaceHostSubdirPlaceRefused(t *testing.T) {
	var rst, est, ost, bst syscall.Stat_t
	must(t, syscall.Stat("/", &rst))
	must(t, syscall.Stat("/etc", &est))
	must(t, syscall.Stat("/root", &ost))
	must(t, syscall.Stat("/var/tmp", &bst))
	if est.Dev != bst.Dev || ost.Dev != bst.Dev || rst.Dev != bst.Dev {
		t.Skip("/etc, /root and /var/tmp are not on one file system: the case needs them on the host's disk")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		okws := filepath.Join(s.base, "okws")
		must(t, os.Mkdir(okws, 0o755))
		s.chown(okws)
		probe := "/etc/gosbx-it-subdir-probe-" + filepath.Base(s.base)
		t.Cleanup(func() { os.Remove(probe) })
		ctx := s.limitCtx(runLimit)
		var g []string
		for _, a := range s.rawCommand(ctx).Args {
			if a == gosbxBin {
				a = "/gosbx" // a copy inside the container's root
			}
			g = append(g, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
		}
		G := strings.Join(g, " ")
		script := fmt.Sprintf(`B=$1; P=$2; R=$B/ctr; O=$B/ovl
mkdir -p "$R" "$O" || exit 77
mount -t tmpfs gosbx-it "$R" && mount -t tmpfs gosbx-it "$O" || exit 77
mkdir -p "$R/usr" "$R/etc" "$R/proc" "$R/dev" "$R/sys" "$R/tmp" "$R/run" "$R/hostetc" "$R/hostroot" "$R/hostws" "$R/oldroot"
for d in usr etc; do mkdir -p "$O/$d-u" "$O/$d-w"; mount -t overlay gosbx-it -o "lowerdir=/$d,upperdir=$O/$d-u,workdir=$O/$d-w" "$R/$d" || exit 77; done
for l in bin lib lib64 sbin; do ln -s usr/$l "$R/$l"; done
mount --rbind /dev "$R/dev" && mount --rbind /sys "$R/sys" || exit 77
mount -t tmpfs gosbx-it "$R/tmp" && mount -t tmpfs gosbx-it "$R/run" && chmod 1777 "$R/tmp" || exit 77
mount --bind /etc "$R/hostetc" && mount --bind /root "$R/hostroot" && mount --bind "$B/okws" "$R/hostws" || exit 77
cp %s "$R/gosbx" && chmod 755 "$R/gosbx" || exit 77
cd "$R" && pivot_root . oldroot || exit 77
cd / && mount -t proc proc /proc && umount -l /oldroot || exit 77
echo "DISK-TOPS $(awk -v d="$(mountpoint -d /hostetc)" '$3 == d && $4 == "/"' /proc/self/mountinfo | grep -c .)"
cd /tmp
run() { name=$1; shift; HOME=/tmp %s "$@" </dev/null >"/tmp/out-$name" 2>&1; echo "CASE $name RC $? $(tr '\n' ' ' < "/tmp/out-$name")"; }
run etc exec --workspace /hostetc -- /bin/touch "/hostetc/$(basename "$P")"
run root exec --workspace /hostroot -- /bin/true
run allowed exec --workspace /hostws -- /bin/touch /hostws/probe-allowed
`, gosbxBin, G)
		cmd := exec.CommandContext(ctx, "/usr/bin/unshare", "-m", "--propagation", "private", shellPath, "-c", script, "_", s.base, probe)
		cmd.Env = s.env()
		cmd.Dir = s.base
		cmd.WaitDelay = 5 * time.Second
		r := s.runCmd(ctx, cmd)
		t.Logf("in the container: %s", r.stdout)
		if r.code == 77 {
			t.Skipf("cannot create the container's mounts here: %s", r.stderr)
		}
		if !strings.Contains(r.stdout, "DISK-TOPS 0\n") {
			t.Fatalf("a mount shows the host disk's top (the case needs only subdirectories):\n%v", r)
		}
		got := map[string]string{}
		for _, l := range strings.Split(r.stdout, "\n") {
			if rest, ok := strings.CutPrefix(l, "CASE "); ok {
				name, out, _ := strings.Cut(rest, " ")
				got[name] = out
			}
		}
		for name, place := range map[string]string{"etc": "/etc", "root": "/root"} {
			if out := got[name]; !strings.HasPrefix(out, "RC 125 ") || !strings.Contains(out, "refusing "+place) || !strings.Contains(out, "of device") {
				t.Errorf("case %s: want 125 refusing the place %s, got: %q\n%v", name, place, out, r)
			}
		}
		if _, err := os.Lstat(probe); err == nil {
			t.Errorf("the command wrote the host's /etc through /hostetc, the bind of it")
		}
		if out := got["allowed"]; !strings.HasPrefix(out, "RC 0 ") {
			t.Errorf("a bound project directory refused: %q\n%v", out, r)
		}
		if _, err := os.Lstat(filepath.Join(okws, "probe-allowed")); err != nil {
			t.Errorf("the allowed workspace's probe is missing: %v\n%v", err, r)
		}
	})
}
