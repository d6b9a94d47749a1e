package config

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/wire"
	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/seccomp"
)

// fullConfig sets every field the init is sent, and the launcher's own ones.
func fullConfig() *Config {
	umask := uint32(0o027)
	mem := int64(1 << 30)
	return &Config{
		Process: &specs.Process{User: specs.User{UID: 1000, GID: 1001, Umask: &umask}, Args: []string{"sh", "-c", "echo \x00 ü"},
			Env: []string{"A=1", ""}, Cwd: "/w", NoNewPrivileges: true,
			Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1 << 62, Soft: 1024}}},
		Hostname: "gosbx",
		Mounts: []specs.Mount{{Destination: "/usr", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro"}},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"mode=1777"}}},
		Linux: &Linux{
			UIDMappings: []specs.LinuxIDMapping{{ContainerID: 1000, HostID: 1000, Size: 1}},
			GIDMappings: []specs.LinuxIDMapping{{ContainerID: 1001, HostID: 1001, Size: 1}},
			Namespaces:  []specs.LinuxNamespace{{Type: specs.UserNamespace}, {Type: specs.MountNamespace}, {Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}},
			Filter: seccomp.Program{{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4},
				{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}},
			Seccomp:       &specs.LinuxSeccomp{DefaultAction: specs.ActAllow},
			MaskedPaths:   []string{"/proc/kcore"},
			ReadonlyPaths: []string{"/proc/sys", "/w/.git"},
			Resources:     &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &mem}},
		},
		Symlinks:         []Symlink{{Path: "/bin", Target: "usr/bin"}, {Path: "/dev/fd", Target: "/proc/self/fd"}},
		ReadonlyOptional: []string{"/proc/sys"},
		Limits:           Limits{Required: []string{"memory"}, CgroupParent: "x"},
		RootID:           &RootID{Range: IDRange{Base: 2_100_000_000, Count: 65536}, AllowHostRoot: true},
		Cleanup: []cleanup.Entry{{Kind: cleanup.RemoveIfCreated, Path: "/w/.git/commondir", Anytime: true},
			{Kind: cleanup.RemoveNewEntries, Path: "/w/.git/modules", Keep: []string{"a", "b"}, KeepIDs: []cleanup.ID{{Dev: 66306, Ino: 1 << 40, Type: 0o100000}, {Dev: 1, Ino: 2, Type: 0o40000}}},
			{Kind: cleanup.RemoveSpecialUnder, Path: "/w/.git", Skip: []string{"objects/??"}},
			{Kind: cleanup.RestoreSymlink, Path: "/w/sub/.git", Target: "../.repo/sub.git"},
			{Kind: cleanup.RemovePackedRefs, Path: "/w/.git/packed-refs", Prefix: "refs/replace/", Keep: []string{"0 refs/replace/1"}},
			{Kind: cleanup.RemoveIndexBits, Path: "/w/.git/index", Keep: []string{"a.sh", "b\x00skip"}, HashLen: 32,
				Was: []cleanup.Stamp{{Name: "index", Dev: 66306, Ino: 1 << 40, Size: 4096, Mtime: 1764668000123456789, Ctime: 1764668000987654321}, {Name: "sharedindex.ab"}}},
			{Kind: cleanup.VerifyObjects, Path: "/w/.git/objects", HashLen: 20, Since: 1764668000123456789, Was: []cleanup.Stamp{{Name: "pack-1.pack", Ino: 7}}},
			{Kind: cleanup.RestoreMode, Path: "/w/.git", Mode: 0o2775}},
		MakeDirs:   []string{"/w/.git/hooks"},
		Egress:     &Egress{Allow: []string{"pypi.org", "api.example:8443"}, Deny: []string{"*.evil.example"}, CapturePorts: []uint16{8443}},
		Publish:    []Publish{{HostIP: "127.0.0.1", HostPort: 8080, Port: 8000}, {HostIP: "::1", HostPort: 9, Port: 65535}},
		HostPorts:  []uint16{5432, 6379},
		UserCounts: []UserCount{{Name: "max_inotify_instances", Max: 64}, {Name: "max_fanotify_marks", Max: 102516}},
	}
}

// What the init decodes is the config it was given, field for field, but the
// launcher's own fields (the cgroup, the host id) and the filter's source.
func TestWireRoundTrip(t *testing.T) {
	c := fullConfig()
	got, err := Decode(Encode(c))
	if err != nil {
		t.Fatal(err)
	}
	want := *c
	l := *c.Linux
	l.Resources, l.Seccomp = nil, nil
	want.Linux, want.Limits, want.RootID, want.MakeDirs = &l, Limits{}, nil, nil
	// of egress that it is there and its capture ports, of the forwards the ports inside
	want.Egress, want.Publish = &Egress{CapturePorts: []uint16{8443}}, []Publish{{Port: 8000}, {Port: 65535}}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(&want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("the init would decode\n%s\nfor\n%s", gotJSON, wantJSON)
	}
	if !slices.Equal(got.UserCounts, c.UserCounts) { // not in the JSON
		t.Errorf("the init would decode user counts %v for %v", got.UserCounts, c.UserCounts)
	}
	if empty, err := Decode(Encode(&Config{})); err != nil || !slices.Equal(Encode(empty), Encode(&Config{})) {
		t.Errorf("an empty config: %+v, %v", empty, err)
	}
}

// The process of a pooled command decodes to what was encoded, umask and rlimits
// included; an absent process stays absent.
func TestWireProcessRoundTrip(t *testing.T) {
	p := fullConfig().Process
	got, err := DecodeProcess(EncodeProcess(p))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(p)
	if string(g) != string(w) {
		t.Errorf("decoded\n%s\nwant\n%s", g, w)
	}
	if got, err := DecodeProcess(EncodeProcess(nil)); err != nil || got != nil {
		t.Errorf("an absent process decodes to %+v, %v", got, err)
	}
}

// A truncated, extended or corrupted encoding is an error (or, for a corruption that
// still parses, some config), never a panic or an allocation the input cannot back.
func TestWireDecodeMalformed(t *testing.T) {
	b := Encode(fullConfig())
	for n := 0; n < len(b); n++ {
		if _, err := Decode(b[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("a prefix of %d of %d bytes: %v, want ErrMalformed", n, len(b), err)
		}
	}
	if _, err := Decode(append(slices.Clone(b), 0)); !errors.Is(err, ErrMalformed) {
		t.Errorf("a trailing byte: %v, want ErrMalformed", err)
	}
	huge := append([]byte(wireMagic), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)
	if _, err := Decode(huge); !errors.Is(err, ErrMalformed) {
		t.Errorf("a length of 2^63: %v, want ErrMalformed", err)
	}
	// a filter that is not whole instructions
	bad := fullConfig()
	e := &wire.Encoder{}
	e.Bytes(bad.Linux.Filter.Bytes())
	fb := Encode(bad)
	i := bytesIndex(fb, e.B)
	if i < 0 {
		t.Fatal("the filter is not in the encoding")
	}
	// the filter one byte shorter: its length prefix (one byte) less one, its last byte gone
	cut := append(append(slices.Clone(fb[:i]), fb[i]-1), fb[i+1:i+len(e.B)-1]...)
	cut = append(cut, fb[i+len(e.B):]...)
	if _, err := Decode(cut); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "instructions") {
		t.Errorf("a filter of %d bytes: %v, want ErrMalformed naming the instructions", len(e.B)-2, err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		c := slices.Clone(b)
		for range 1 + rnd.IntN(4) {
			c[len(wireMagic)+rnd.IntN(len(c)-len(wireMagic))] = byte(rnd.Uint32())
		}
		Decode(c) // must not panic
	}
}

func bytesIndex(b, sub []byte) int {
	for i := 0; i+len(sub) <= len(b); i++ {
		if slices.Equal(b[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// Any input decodes to an error or to a config that survives a round trip unchanged.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(fullConfig()))
	f.Add(Encode(&Config{}))
	f.Add(EncodeProcess(fullConfig().Process))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			return
		}
		once := Encode(c)
		c2, err := Decode(once)
		if err != nil {
			t.Fatalf("%x decoded, but its encoding %x does not: %v", b, once, err)
		}
		if twice := Encode(c2); !slices.Equal(once, twice) {
			t.Errorf("%x: encoded %x, then %x", b, once, twice)
		}
	})
}
