package nsinit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The wire types travel in a small binary encoding, not JSON: the launcher and the init
// are the same binary, and encoding/json's first use in a process (building the field
// tables of every type reachable from wireSpec, by reflection) cost the init ~0.4 ms of
// each launch. Integers are uvarints; a string or byte slice is its length then its
// bytes; a slice its count then its elements; an optional value a presence byte.
// Annotations go in key order, so an encoding depends on the value alone.

// wireMagic starts every encoding: a frame that is not one is refused.
const wireMagic = "gosbx-wire-1\x00"

type encoder struct{ b []byte }

func (e *encoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) bytes(b []byte) {
	e.uint(uint64(len(b)))
	e.b = append(e.b, b...)
}

func (e *encoder) str(s string) {
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) strs(ss []string) {
	e.uint(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func (e *encoder) idMaps(m []specs.LinuxIDMapping) {
	e.uint(uint64(len(m)))
	for _, x := range m {
		e.uint(uint64(x.ContainerID))
		e.uint(uint64(x.HostID))
		e.uint(uint64(x.Size))
	}
}

func (e *encoder) process(p *wireProcess) {
	e.bool(p != nil)
	if p == nil {
		return
	}
	e.uint(uint64(p.User.UID))
	e.uint(uint64(p.User.GID))
	e.bool(p.User.Umask != nil)
	if p.User.Umask != nil {
		e.uint(uint64(*p.User.Umask))
	}
	e.strs(p.Args)
	e.strs(p.Env)
	e.str(p.Cwd)
	e.uint(uint64(len(p.Rlimits)))
	for _, r := range p.Rlimits {
		e.str(r.Type)
		e.uint(r.Hard)
		e.uint(r.Soft)
	}
	e.bool(p.NoNewPrivileges)
}

// encodeSpec is the encoding of w that decodeSpec reverses.
func encodeSpec(w *wireSpec) []byte {
	e := &encoder{b: make([]byte, 0, 4096)}
	e.b = append(e.b, wireMagic...)
	e.str(w.Version)
	e.process(w.Process)
	e.bool(w.Root != nil)
	if w.Root != nil {
		e.str(w.Root.Path)
		e.bool(w.Root.Readonly)
	}
	e.str(w.Hostname)
	e.uint(uint64(len(w.Mounts)))
	for _, m := range w.Mounts {
		e.str(m.Destination)
		e.str(m.Type)
		e.str(m.Source)
		e.strs(m.Options)
	}
	keys := make([]string, 0, len(w.Annotations))
	for k := range w.Annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.uint(uint64(len(keys)))
	for _, k := range keys {
		e.str(k)
		e.str(w.Annotations[k])
	}
	e.bool(w.Linux != nil)
	if l := w.Linux; l != nil {
		e.idMaps(l.UIDMappings)
		e.idMaps(l.GIDMappings)
		e.uint(uint64(len(l.Namespaces)))
		for _, ns := range l.Namespaces {
			e.str(string(ns.Type))
			e.str(ns.Path)
		}
		e.bytes(l.Filter)
		e.strs(l.MaskedPaths)
		e.strs(l.ReadonlyPaths)
	}
	return e.b
}

// encodeProcess is the encoding of a pooled command's process (decodeProcess).
func encodeProcess(p *wireProcess) []byte {
	e := &encoder{b: make([]byte, 0, 1024)}
	e.b = append(e.b, wireMagic...)
	e.process(p)
	return e.b
}

var errWire = errors.New("malformed wire encoding")

// decoder reads what encoder wrote; the first error sticks and every later read
// returns a zero value, so callers check d.err once at the end.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errWire
	}
	d.b = nil
}

func (d *decoder) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint32() uint32 {
	v := d.uint()
	if v > 1<<32-1 {
		d.fail()
		return 0
	}
	return uint32(v)
}

func (d *decoder) bool() bool {
	if len(d.b) == 0 || d.b[0] > 1 {
		d.fail()
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

// count reads a length or element count; each element takes at least min bytes, so a
// count the rest of the input cannot hold is an error, not an allocation.
func (d *decoder) count(min int) int {
	n := d.uint()
	if n > uint64(len(d.b)/min) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *decoder) raw() []byte {
	n := d.count(1)
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

func (d *decoder) str() string { return string(d.raw()) }

func (d *decoder) strs() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *decoder) idMaps() []specs.LinuxIDMapping {
	n := d.count(3)
	if n == 0 {
		return nil
	}
	out := make([]specs.LinuxIDMapping, n)
	for i := range out {
		out[i] = specs.LinuxIDMapping{ContainerID: d.uint32(), HostID: d.uint32(), Size: d.uint32()}
	}
	return out
}

func (d *decoder) process() *wireProcess {
	if !d.bool() {
		return nil
	}
	p := &wireProcess{User: wireUser{UID: d.uint32(), GID: d.uint32()}}
	if d.bool() {
		u := d.uint32()
		p.User.Umask = &u
	}
	p.Args = d.strs()
	p.Env = d.strs()
	p.Cwd = d.str()
	if n := d.count(3); n > 0 {
		p.Rlimits = make([]specs.POSIXRlimit, n)
		for i := range p.Rlimits {
			p.Rlimits[i] = specs.POSIXRlimit{Type: d.str(), Hard: d.uint(), Soft: d.uint()}
		}
	}
	p.NoNewPrivileges = d.bool()
	return p
}

func (d *decoder) magic() {
	if len(d.b) < len(wireMagic) || string(d.b[:len(wireMagic)]) != wireMagic {
		d.fail()
		return
	}
	d.b = d.b[len(wireMagic):]
}

func (d *decoder) end(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return fmt.Errorf("decode %s: %w", what, d.err)
	}
	return nil
}

// decodeSpec reverses encodeSpec. Errors wrap errWire.
func decodeSpec(b []byte) (*wireSpec, error) {
	d := &decoder{b: b}
	d.magic()
	w := &wireSpec{Version: d.str(), Process: d.process()}
	if d.bool() {
		w.Root = &specs.Root{Path: d.str(), Readonly: d.bool()}
	}
	w.Hostname = d.str()
	if n := d.count(4); n > 0 {
		w.Mounts = make([]wireMount, n)
		for i := range w.Mounts {
			w.Mounts[i] = wireMount{Destination: d.str(), Type: d.str(), Source: d.str(), Options: d.strs()}
		}
	}
	if n := d.count(2); n > 0 {
		w.Annotations = make(map[string]string, n)
		for range n {
			k := d.str()
			w.Annotations[k] = d.str()
		}
	}
	if d.bool() {
		l := &wireLinux{UIDMappings: d.idMaps(), GIDMappings: d.idMaps()}
		if n := d.count(2); n > 0 {
			l.Namespaces = make([]specs.LinuxNamespace, n)
			for i := range l.Namespaces {
				l.Namespaces[i] = specs.LinuxNamespace{Type: specs.LinuxNamespaceType(d.str()), Path: d.str()}
			}
		}
		if f := d.raw(); len(f) > 0 {
			l.Filter = f
		}
		l.MaskedPaths = d.strs()
		l.ReadonlyPaths = d.strs()
		w.Linux = l
	}
	if err := d.end("config"); err != nil {
		return nil, err
	}
	return w, nil
}

// decodeProcess reverses encodeProcess. Errors wrap errWire.
func decodeProcess(b []byte) (*wireProcess, error) {
	d := &decoder{b: b}
	d.magic()
	p := d.process()
	if err := d.end("process"); err != nil {
		return nil, err
	}
	return p, nil
}
