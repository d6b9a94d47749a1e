package integration

// Trial finding T8: gosbx in a container image without /tmp or /var/tmp (contrib/docker's
// FROM scratch, run without --tmpfs /tmp), where gosbx exec works. doctor must say so
// (exit 0, its mount probe and launch passing, with $TMPDIR in /dev, which the policy
// refuses as a workspace, skipped), and its sessions check must warn, naming
// --tmpfs /tmp, where session start cannot make /tmp/gosbx-UID.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestContainerNoTmp(t *testing.T) {
	h := requirePodman(t)
	if err := os.Remove(filepath.Join(h.rootfs, "tmp")); err != nil {
		t.Fatal(err)
	}
	p := posture{"no /tmp", append(append([]string{}, shippedPosture.opts...), "--workdir", "/work", "--env", "TMPDIR=/dev/shm"), 0}
	ws, outside := containerDirs(t, nobodyID)
	r := h.run(t, p, nobodyID, ws, outside, "exec", "--", "/bin/sh", "-c", "echo ran > ran")
	mustSucceed(t, r, "gosbx exec in a container without /tmp")
	d := h.run(t, p, nobodyID, ws, outside, "doctor", "--json")
	ok, checks := parseDoctorJSON(t, d.stdout, nobodyID)
	byName := map[string]doctorCheck{}
	for _, c := range checks {
		byName[c.Name] = c
	}
	if !ok || d.code != 0 {
		t.Errorf("doctor where gosbx exec works: ok %v exit %d, want ok:\n%s\n%s", ok, d.code, clip(d.stdout), d.stderr)
	}
	for _, name := range []string{"new mount API", "sandbox launch"} {
		if c := byName[name]; c.Status != "ok" {
			t.Errorf("doctor's %q: %+v; want ok", name, c)
		}
	}
	if c := byName["sessions"]; c.Status != "warn" || !strings.Contains(c.Fix, "--tmpfs /tmp") {
		t.Errorf("doctor's sessions check with no /tmp for /tmp/gosbx-65534: %+v; want warn naming --tmpfs /tmp", c)
	}
	for _, c := range checks {
		if strings.Contains(c.Fix, "Linux 5.12") {
			t.Errorf("doctor names an old kernel: %+v", c)
		}
	}
	ents, _ := os.ReadDir(ws)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "gosbx-doctor-") {
			t.Errorf("doctor left %s in the workspace", filepath.Join(ws, e.Name()))
		}
	}
}
