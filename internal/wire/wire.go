// Package wire is the binary encoding of what crosses between gosbx's launcher and the
// sandbox's init (nsinit/config's Config, nsinit's sync messages): integers are
// uvarints, a string or byte slice is its length then its bytes, a list its count then
// its elements, a bool one byte 0 or 1. Not JSON: the launcher and the init are the same
// binary, and encoding/json's first use in a process (its reflection tables) cost the
// init ~0.4 ms of each launch. Decoding is bounded by its input: a count the rest of
// the input cannot hold is an error, not an allocation.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed wire encoding")

// Encoder appends to B.
type Encoder struct{ B []byte }

// Uint appends v as a uvarint.
func (e *Encoder) Uint(v uint64) { e.B = binary.AppendUvarint(e.B, v) }

// Bool appends one byte, 1 for true.
func (e *Encoder) Bool(v bool) {
	if v {
		e.B = append(e.B, 1)
	} else {
		e.B = append(e.B, 0)
	}
}

// Bytes appends len(b), then b.
func (e *Encoder) Bytes(b []byte) {
	e.Uint(uint64(len(b)))
	e.B = append(e.B, b...)
}

// Str appends len(s), then s.
func (e *Encoder) Str(s string) {
	e.Uint(uint64(len(s)))
	e.B = append(e.B, s...)
}

// Strs appends len(ss), then each string.
func (e *Encoder) Strs(ss []string) {
	e.Uint(uint64(len(ss)))
	for _, s := range ss {
		e.Str(s)
	}
}

// Decoder reads what Encoder wrote from B; the first error sticks and every later read
// returns a zero value, so callers check Err (or End) once at the end.
type Decoder struct {
	B   []byte
	Err error
}

// Fail records err (ErrMalformed when nil) unless an error is recorded already.
func (d *Decoder) Fail(err error) {
	if d.Err == nil {
		if err == nil {
			err = ErrMalformed
		}
		d.Err = err
	}
	d.B = nil
}

// Uint reads a uvarint.
func (d *Decoder) Uint() uint64 {
	v, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.Fail(nil)
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Uint32 reads a uvarint; one above 2^32-1 is an error.
func (d *Decoder) Uint32() uint32 {
	v := d.Uint()
	if v > 1<<32-1 {
		d.Fail(nil)
		return 0
	}
	return uint32(v)
}

// Bool reads a byte 0 or 1; any other is an error.
func (d *Decoder) Bool() bool {
	if len(d.B) == 0 || d.B[0] > 1 {
		d.Fail(nil)
		return false
	}
	v := d.B[0] == 1
	d.B = d.B[1:]
	return v
}

// Count reads a length or element count; each element takes at least min bytes, so a
// count the rest of the input cannot hold is an error.
func (d *Decoder) Count(min int) int {
	n := d.Uint()
	if n > uint64(len(d.B)/min) {
		d.Fail(nil)
		return 0
	}
	return int(n)
}

// Raw reads a byte slice; it aliases B.
func (d *Decoder) Raw() []byte {
	n := d.Count(1)
	b := d.B[:n:n]
	d.B = d.B[n:]
	return b
}

// Str reads a string (a copy).
func (d *Decoder) Str() string { return string(d.Raw()) }

// Strs reads a list of strings (nil when empty).
func (d *Decoder) Strs() []string {
	n := d.Count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.Str()
	}
	return out
}

// Magic consumes the prefix m, or fails.
func (d *Decoder) Magic(m string) {
	if len(d.B) < len(m) || string(d.B[:len(m)]) != m {
		d.Fail(nil)
		return
	}
	d.B = d.B[len(m):]
}

// End returns the error of decoding what (nil when all went well and nothing is left).
func (d *Decoder) End(what string) error {
	if d.Err == nil && len(d.B) != 0 {
		d.Fail(nil)
	}
	if d.Err != nil {
		return fmt.Errorf("decode %s: %w", what, d.Err)
	}
	return nil
}
