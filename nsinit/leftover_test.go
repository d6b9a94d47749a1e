package nsinit

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// direntOf is one linux_dirent64 record of name, 8-byte aligned.
func direntOf(name string) []byte {
	n := (19 + len(name) + 1 + 7) &^ 7
	b := make([]byte, n)
	binary.LittleEndian.PutUint16(b[16:], uint16(n))
	copy(b[19:], name)
	return b
}

func TestAppendPids(t *testing.T) {
	var b []byte
	for _, n := range []string{".", "..", "self", "1", "12", "cpuinfo", "7", "1a", "+3", "300000"} {
		b = append(b, direntOf(n)...)
	}
	if got := appendPids(nil, b); !reflect.DeepEqual(got, []int{12, 7, 300000}) {
		t.Errorf("pids %v; want 12 7 300000 (not 1, not names)", got)
	}
	if got := appendPids(nil, b[:len(b)-3]); !reflect.DeepEqual(got, []int{12, 7}) {
		t.Errorf("a cut record: %v", got)
	}
}

func TestStatNameState(t *testing.T) {
	for _, tc := range []struct {
		in, name string
		state    byte
		ok       bool
	}{
		{"12 (sleep) S 1 12", "sleep", 'S', true},
		{"7 (a) b) (c) Z 0", "a) b) (c", 'Z', true},
		{"7 (tmux: server) R", "tmux: server", 'R', true},
		{"7 (x)", "", 0, false},
		{"garbage", "", 0, false},
	} {
		name, state, ok := statNameState([]byte(tc.in))
		if string(name) != tc.name || state != tc.state || ok != tc.ok {
			t.Errorf("%q: %q %c %v", tc.in, name, state, ok)
		}
	}
}
