package mounts

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func TestErrorRendering(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"bind ro", errorf("bind", "/usr", "/usr", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, unix.EPERM),
			"bind /usr on /usr (ro,nosuid,nodev): operation not permitted"},
		{"rw with every flag", errorf("tmpfs", "tmpfs", "/tmp", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, unix.ENOSPC),
			"tmpfs tmpfs on /tmp (rw,nosuid,nodev,noexec): no space left on device"},
		{"no attributes at all", errorf("bind", "/a", "/b", 0, unix.ENOENT), "bind /a on /b (rw): no such file or directory"},
		{"noAttr has no flags", errorf("mkdir", "", "/x", noAttr, unix.EEXIST), "mkdir /x: file exists"},
		{"target only", &Error{Op: "mask", Target: "/proc/kcore", Err: unix.EACCES}, "mask /proc/kcore: permission denied"},
		{"source only", &Error{Op: "umount", Source: "old root", Err: unix.EBUSY}, "umount old root: device or resource busy"},
		{"wrapped cause", &Error{Op: "bind", Source: "/s", Target: "/d", Flags: "ro", Err: fmt.Errorf("move_mount: %w", unix.ELOOP)},
			"bind /s on /d (ro): move_mount: too many levels of symbolic links"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q\nwant      %q", got, tt.want)
			}
			var me *Error
			if !errors.As(tt.err, &me) {
				t.Fatalf("%T is not a *mounts.Error", tt.err)
			}
			var errno unix.Errno
			if !errors.As(tt.err, &errno) {
				t.Fatalf("%v does not unwrap to an errno", tt.err)
			}
			if !errors.Is(tt.err, errno) {
				t.Errorf("errors.Is(%v, %v) = false", tt.err, errno)
			}
		})
	}
	if err := errorf("bind", "/usr", "/usr", 0, unix.EPERM); !errors.Is(err, os.ErrPermission) {
		t.Errorf("errors.Is(%v, os.ErrPermission) = false", err)
	}
}

func TestParseOptions(t *testing.T) {
	const (
		ro     = unix.MOUNT_ATTR_RDONLY
		nosuid = unix.MOUNT_ATTR_NOSUID
		nodev  = unix.MOUNT_ATTR_NODEV
		noexec = unix.MOUNT_ATTR_NOEXEC
	)
	tests := []struct {
		name      string
		m         specs.Mount
		attr      uint64
		recursive bool
		ro        bool
		data      map[string]string
		wantErr   bool
	}{
		{name: "rbind ro", m: specs.Mount{Type: "bind", Options: []string{"rbind", "nosuid", "nodev", "ro"}},
			attr: ro | nosuid | nodev, recursive: true, ro: true, data: map[string]string{}},
		{name: "bind rw", m: specs.Mount{Type: "bind", Options: []string{"bind", "rw", "noexec"}},
			attr: noexec, data: map[string]string{}},
		{name: "bind propagation words", m: specs.Mount{Type: "bind", Options: []string{"bind", "private", "rprivate"}},
			data: map[string]string{}},
		{name: "bind no options", m: specs.Mount{Type: "bind"}, data: map[string]string{}},
		{name: "bind unknown", m: specs.Mount{Type: "bind", Source: "/s", Destination: "/d", Options: []string{"rbind", "mode=0755"}}, wantErr: true},
		{name: "bind suid", m: specs.Mount{Type: "bind", Options: []string{"suid"}}, wantErr: true},
		{name: "tmpfs", m: specs.Mount{Type: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", "size=64k"}},
			attr: nosuid | nodev, data: map[string]string{"mode": "1777", "size": "64k"}},
		{name: "tmpfs ro is sealed later, not an attribute", m: specs.Mount{Type: "tmpfs", Options: []string{"ro", "mode=0755"}},
			ro: true, data: map[string]string{"mode": "0755"}},
		{name: "devpts flags", m: specs.Mount{Type: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666"}},
			attr: nosuid | noexec, data: map[string]string{"newinstance": "", "ptmxmode": "0666"}},
		{name: "value with =", m: specs.Mount{Type: "tmpfs", Options: []string{"x=a=b"}}, data: map[string]string{"x": "a=b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseOptions(tt.m)
			// the check alone (RawSupported's): the same answer, no data
			if oc, errc := parseOptionsData(tt.m, false); (errc == nil) != (err == nil) || oc.data != nil ||
				oc.attr != o.attr || oc.recursive != o.recursive || oc.ro != o.ro {
				t.Errorf("parseOptionsData(%q, false) = %+v, %v; parseOptions gave %+v, %v", tt.m.Options, oc, errc, o, err)
			}
			if tt.wantErr {
				var me *Error
				if !errors.As(err, &me) || me.Op != "bind" {
					t.Fatalf("parseOptions(%q) error = %v; want a bind *Error", tt.m.Options, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.attr != tt.attr || o.recursive != tt.recursive || o.ro != tt.ro || !maps.Equal(o.data, tt.data) {
				t.Errorf("parseOptions(%q) = %+v; want attr=%#x recursive=%v ro=%v data=%v",
					tt.m.Options, o, tt.attr, tt.recursive, tt.ro, tt.data)
			}
		})
	}
}

func TestRel(t *testing.T) {
	tests := map[string]string{
		"/":             ".",
		"":              ".",
		"/usr":          "usr",
		"/usr/bin/":     "usr/bin",
		"//a//b":        "a/b",
		"/a/../b":       "b",
		"/../../etc":    "etc",
		"/..":           ".",
		"relative/path": "relative/path",
		"../escape":     "escape",
		"/a/./b/.":      "a/b",
	}
	for in, want := range tests {
		if got := rel(in); got != want {
			t.Errorf("rel(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestDirOfBaseOf(t *testing.T) {
	tests := []struct{ p, dir, base string }{
		{"/a/b/c", "/a/b", "c"},
		{"/a", "/", "a"},
		{"/dev/ptmx", "/dev", "ptmx"},
	}
	for _, tt := range tests {
		if got := dirOf(tt.p); got != tt.dir {
			t.Errorf("dirOf(%q) = %q; want %q", tt.p, got, tt.dir)
		}
		if got := baseOf(tt.p); got != tt.base {
			t.Errorf("baseOf(%q) = %q; want %q", tt.p, got, tt.base)
		}
	}
}

func TestOpenNull(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "null-link")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		ok   bool
	}{
		{"/dev/null", true},
		{file, false},
		{dir, false},
		{link, false},
		{"/dev/zero", false},
		{filepath.Join(dir, "missing"), false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if _, err := os.Stat(tt.path); err != nil && tt.ok {
				t.Skipf("%s: %v", tt.path, err)
			}
			n, err := OpenNull(tt.path)
			if tt.ok {
				if err != nil {
					t.Fatalf("OpenNull(%s): %v", tt.path, err)
				}
				if err := n.Close(); err != nil {
					t.Error(err)
				}
				return
			}
			if err == nil {
				n.Close()
				t.Fatalf("OpenNull(%s) accepted a non-null", tt.path)
			}
			var me *Error
			if !errors.As(err, &me) || me.Source != tt.path {
				t.Errorf("error %v (%T); want a *mounts.Error naming %s", err, err, tt.path)
			}
		})
	}
}
