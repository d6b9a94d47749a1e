package wire

import (
	"errors"
	"slices"
	"testing"
)

// What Encoder writes, Decoder reads back; every malformed input is an error that
// sticks, never a panic or an allocation the input cannot back.
func TestRoundTripAndErrors(t *testing.T) {
	e := &Encoder{}
	e.Uint(1 << 40)
	e.Uint(7)
	e.Bool(true)
	e.Bytes([]byte{1, 2})
	e.Str("ü")
	e.Strs([]string{"a", ""})
	d := &Decoder{B: e.B}
	if d.Uint() != 1<<40 || d.Uint32() != 7 || !d.Bool() || !slices.Equal(d.Raw(), []byte{1, 2}) || d.Str() != "ü" ||
		!slices.Equal(d.Strs(), []string{"a", ""}) || d.End("x") != nil {
		t.Fatalf("round trip: %v", d.Err)
	}
	for name, b := range map[string][]byte{
		"uint32 overflow":  {0x80, 0x80, 0x80, 0x80, 0x10},
		"bool 2":           {2},
		"count past input": {0xff, 0xff, 0x03, 'a'},
		"trailing byte":    {0, 0, 5},
		"empty":            {},
	} {
		d := &Decoder{B: b}
		switch name {
		case "uint32 overflow":
			d.Uint32()
		case "bool 2":
			d.Bool()
		case "count past input":
			d.Strs()
		case "trailing byte":
			d.Bool()
		case "empty":
			d.Uint()
		}
		d.Str() // after an error: a zero value, no panic
		if err := d.End(name); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	d = &Decoder{B: []byte("gosbx")}
	d.Magic("gosbx-wire")
	if !errors.Is(d.End("magic"), ErrMalformed) {
		t.Error("a short magic was accepted")
	}
}
