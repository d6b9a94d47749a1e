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

// A subdirectory of a file system whose top no mount shows (a container's hostPath bind
// of the host's /etc at /hostetc, attack review 16 F4) is judged by its place's name;
// one of a volume that names no refused tree stays a workspace. The effect from
// outside: integration TestWorkspaceHostSubdirPlaceRefused.
func TestRefusedPlaceSubdirBind(t *testing.T) {
	mounts := []mountEntry{{"0:50", "/", "/"}, {"8:1", "/etc", "/hostetc"}, {"8:1", "/home/u", "/hu"},
		{"8:1", "/usr/share", "/share"}, {"8:2", "/data/proj", "/work"}, {"8:1", "/srv/ws", "/ws"}}
	for _, tc := range []struct {
		canon string
		cp    place
		want  bool
	}{
		{"/hostetc", place{"8:1", "/etc"}, true}, {"/hostetc/ssh", place{"8:1", "/etc/ssh"}, true},
		{"/hu", place{"8:1", "/home/u"}, true}, {"/hu/proj", place{"8:1", "/home/u/proj"}, false},
		{"/share", place{"8:1", "/usr/share"}, true},
		{"/work", place{"8:2", "/data/proj"}, false}, {"/ws", place{"8:1", "/srv/ws"}, false},
	} {
		err := refusedPlace("workspace", tc.canon, tc.cp, mounts, fakeHost("/"), nil)
		if (err != nil) != tc.want {
			t.Errorf("refusedPlace(%s %+v) = %v, want refused %v", tc.canon, tc.cp, err, tc.want)
		}
	}
}
