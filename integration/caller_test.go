package integration

// Issue 14 item 6 and issue 18 item 1: uid 0 without CAP_SYS_ADMIN (a container's root)
// is not a root caller. It takes the unprivileged path: its own user namespace, uid 0
// mapped to itself, binds made inside it. Checked from the host.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRootWithoutSysAdmin(t *testing.T) {
	requireBinary(t)
	// Not parallel: it runs gosbx doctor, whose leftover check (runDoctor) would take a
	// group a parallel test's SIGKILLed launcher left for the next launch to sweep for
	// doctor's. Top-level tests that are not parallel run while no parallel test does.
	s := newSandbox(t, rootNoAdmin)
	outside := filepath.Join(s.base, "outside-"+s.id)
	r := s.sh(nil, `set -e
cat /proc/self/uid_map
grep CapEff /proc/self/status
echo made > made-inside
touch setid; chmod 0640 setid; chmod u+s setid
if echo x > "$1" 2>/dev/null; then echo WROTE-OUTSIDE; fi
if touch /etc/gosbx-`+s.id+` 2>/dev/null; then echo WROTE-ETC; fi`, outside)
	mustSucceed(t, r, "a command as uid 0 without CAP_SYS_ADMIN")
	// chmod u+s succeeds with the bit dropped (the init answers the set-ID call): the
	// effect on the host is what counts.
	if st, err := os.Stat(filepath.Join(s.ws, "setid")); err != nil {
		t.Errorf("setid: %v\n%v", err, r)
	} else if st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || st.Mode().Perm() != 0o640 {
		t.Errorf("a host-root-owned file could be made set-user-ID, or lost the rest of its mode (%v):\n%v", st.Mode(), r)
	}
	if strings.Contains(r.stdout, "WROTE") {
		t.Errorf("the command wrote outside its workspace:\n%v", r)
	}
	// uid 0 mapped to itself, one id: the unprivileged path, not a host id of the range
	if f := strings.Fields(strings.SplitN(r.stdout, "\n", 2)[0]); len(f) != 3 || f[0] != "0" || f[1] != "0" || f[2] != "1" {
		t.Errorf("uid_map inside %q, want \"0 0 1\"\n%v", f, r)
	}
	if !strings.Contains(r.stdout, "CapEff:\t0000000000000000") {
		t.Errorf("the command kept capabilities:\n%v", r)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("%s exists on the host (err %v)", outside, err)
	}
	if _, err := os.Stat("/etc/gosbx-" + s.id); !os.IsNotExist(err) {
		os.Remove("/etc/gosbx-" + s.id)
		t.Errorf("/etc/gosbx-%s was made on the host", s.id)
	}
	uid, _ := ownerOf(t, filepath.Join(s.ws, "made-inside"))
	if uid != 0 {
		t.Errorf("made-inside is owned by %d on the host, want 0 (uid 0 mapped to itself)", uid)
	}

	// The escape probes of gosbx doctor, run by this caller: each must be ok (the
	// probe's escape failed).
	d := runDoctor(t, s, "--json")
	_, checks := parseDoctorJSON(t, d.stdout, 0)
	seen := 0
	for _, ch := range checks {
		if ch.Name == "sandbox launch" || strings.HasPrefix(ch.Name, "escape: ") {
			seen++
			if ch.Status != "ok" {
				t.Errorf("doctor check %q: %s %s (fix %s)", ch.Name, ch.Status, ch.Detail, ch.Fix)
			}
		}
		if ch.Name == "idmapped mounts (root callers)" && !strings.Contains(ch.Detail, "without CAP_SYS_ADMIN") {
			t.Errorf("doctor's idmap check does not say why uid 0 is not a root caller: %+v", ch)
		}
	}
	if seen < 6 {
		t.Errorf("doctor ran %d escape checks, want the sandbox launch and its probes:\n%s", seen, clip(d.stdout))
	}
}
