package policy

import "testing"

// A place in a file system whose top holds etc/ and usr/ is judged by the name rule
// there; a data volume's top stays a workspace (attack review 15 F6; the effect from
// outside: integration TestWorkspaceHostRootPlaceRefused).
func TestRefusedPlace(t *testing.T) {
	sys, data := canonTempDir(t), canonTempDir(t)
	mkdirs(t, sys+"/etc", sys+"/usr", sys+"/home/u/proj", data+"/etc")
	mounts := []mountEntry{{"0:50", "/", "/"}, {"8:1", "/", sys}, {"8:2", "/", data}}
	for _, tc := range []struct {
		cp   place
		want bool
	}{
		{place{"8:1", "/"}, true}, {place{"8:1", "/etc"}, true}, {place{"8:1", "/usr/local/x"}, true},
		{place{"8:1", "/home/u"}, true}, {place{"8:1", "/home/u/proj"}, false}, {place{"8:1", "/var/tmp/ws"}, false},
		{place{"8:2", "/"}, false}, {place{"8:2", "/etc"}, false},
		{place{"0:50", "/"}, true}, {place{"0:50", "/srv/ws"}, false},
	} {
		err := refusedPlace("workspace", "/c", tc.cp, mounts, fakeHost("/"), nil)
		if (err != nil) != tc.want {
			t.Errorf("refusedPlace(%+v) = %v, want refused %v", tc.cp, err, tc.want)
		}
	}
}
