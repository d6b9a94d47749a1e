package policy

import "testing"

// NestsByMount tells a bind source that reaches a directory under another name (a bind
// mount of it, of a directory above it, or one inside the source), and no other.
func TestNestsByMount(t *testing.T) {
	tab := &MountTable{[]mountEntry{
		{dev: "8:1", root: "/", point: "/"},
		{dev: "0:25", root: "/", point: "/run"},
		{dev: "8:1", root: "/srv/xdg", point: "/mnt/alias"},      // the directory above /srv/xdg/gosbx
		{dev: "0:25", root: "/gosbx/hosts", point: "/opt/hosts"}, // a directory inside /run/gosbx
		{dev: "0:25", root: "/", point: "/data/run"},             // the whole /run, inside /data
		{dev: "8:1", root: "/srv/other", point: "/mnt/other"},
	}}
	for _, c := range []struct {
		src, dir, via string
		ok            bool
	}{
		{"/mnt/alias", "/srv/xdg/gosbx", "/mnt/alias", true},
		{"/mnt/alias/gosbx/x", "/srv/xdg/gosbx", "/mnt/alias/gosbx/x", true},
		{"/mnt", "/srv/xdg/gosbx", "/mnt/alias", true},
		{"/opt/hosts", "/run/gosbx", "/opt/hosts", true},
		{"/data", "/run/gosbx", "/data/run", true},
		{"/data", "/run/user/0/gosbx", "/data/run", true}, // not made yet: its place still counts
		{"/mnt/other", "/srv/xdg/gosbx", "", false},
		{"/usr", "/run/gosbx", "", false},
		{"/usr", "/srv/xdg/gosbx", "", false},
		{"/etc", "/tmp/gosbx-0", "", false},
		{"/run/systemd/resolve/stub-resolv.conf", "/run/gosbx", "", false},
	} {
		via, ok := tab.NestsByMount(c.src, c.dir)
		if via != c.via || ok != c.ok {
			t.Errorf("NestsByMount(%s, %s) = %q, %v; want %q, %v", c.src, c.dir, via, ok, c.via, c.ok)
		}
	}
}
