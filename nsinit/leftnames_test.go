package nsinit

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/gosbx/gosbx/internal/rawplan"
)

// From an attack review (26): the raw init's RecLeftName records are reassembled into
// the names as the Go init's leftRunning sends them (each NUL-ended), an empty name
// included, counted by the records that start a name.
func TestRawLeftNames(t *testing.T) {
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rec := func(kind, a uint32, b []byte) {
		var buf [16]byte
		binary.LittleEndian.PutUint32(buf[0:], kind)
		binary.LittleEndian.PutUint32(buf[4:], a)
		copy(buf[8:], b)
		if _, err := wr.Write(buf[:]); err != nil {
			t.Fatal(err)
		}
	}
	// as rawplan's running sends them: part<<8 | bytes, up to 8 bytes a part
	name := func(s string) {
		rec(rawplan.RecLeftName, uint32(min(len(s), 8)), []byte(s[:min(len(s), 8)]))
		if len(s) > 8 {
			rec(rawplan.RecLeftName, 1<<8|uint32(len(s)-8), []byte(s[8:]))
		}
	}
	name("")
	name("vim) and 7 more")
	name("z")
	rec(rawplan.RecExit, 3, nil)
	wr.Close()
	r := &rawLaunch{sync: rd}
	m, ok := r.next()
	if want := "\x00vim) and 7 more\x00z\x00"; !ok || m.Type != msgExit || m.Left != 3 || m.Names != want {
		t.Errorf("next = %+v, %v; want exit, Left 3, Names %q", m, ok, want)
	}
}
