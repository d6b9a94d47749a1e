package config

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/internal/wire"
	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/seccomp"
)

// A Config travels to the init in internal/wire's binary encoding, not JSON: the
// launcher and the init are the same binary, so there is no compatibility to keep, and
// encoding/json's first use in a process cost the init ~0.4 ms of each launch. The
// fields go in a fixed order; an optional value has a presence byte.

// wireMagic starts every encoding: a frame that is not one is refused.
const wireMagic = "gosbx-wire-2\x00"

// ErrMalformed is wrapped by every error of Decode and DecodeProcess.
var ErrMalformed = wire.ErrMalformed

func encodeIDMaps(e *wire.Encoder, m []specs.LinuxIDMapping) {
	e.Uint(uint64(len(m)))
	for _, x := range m {
		e.Uint(uint64(x.ContainerID))
		e.Uint(uint64(x.HostID))
		e.Uint(uint64(x.Size))
	}
}

func encodeProcess(e *wire.Encoder, p *specs.Process) {
	e.Bool(p != nil)
	if p == nil {
		return
	}
	e.Uint(uint64(p.User.UID))
	e.Uint(uint64(p.User.GID))
	e.Bool(p.User.Umask != nil)
	if p.User.Umask != nil {
		e.Uint(uint64(*p.User.Umask))
	}
	e.Strs(p.Args)
	e.Strs(p.Env)
	e.Str(p.Cwd)
	e.Uint(uint64(len(p.Rlimits)))
	for _, r := range p.Rlimits {
		e.Str(r.Type)
		e.Uint(r.Hard)
		e.Uint(r.Soft)
	}
	e.Bool(p.NoNewPrivileges)
}

// Encode is what the init is sent of c (Decode reverses it): everything it reads. Not
// sent are the launcher's own fields (Linux.Resources and Limits: the cgroup; RootID:
// the host id, by then in the id mappings; MakeDirs, made before the clone; Timeout,
// the launcher's timer) and
// Linux.Seccomp, the source of Linux.Filter; of Egress, only that it is set; of Publish,
// the ports inside. Of Process, the fields Validate lets through but capabilities (all
// dropped).
func Encode(c *Config) []byte {
	e := &wire.Encoder{B: make([]byte, 0, 4096)}
	e.B = append(e.B, wireMagic...)
	encodeProcess(e, c.Process)
	e.Str(c.Hostname)
	e.Uint(uint64(len(c.Mounts)))
	for _, m := range c.Mounts {
		e.Str(m.Destination)
		e.Str(m.Type)
		e.Str(m.Source)
		e.Strs(m.Options)
	}
	e.Bool(c.Linux != nil)
	if l := c.Linux; l != nil {
		encodeIDMaps(e, l.UIDMappings)
		encodeIDMaps(e, l.GIDMappings)
		e.Uint(uint64(len(l.Namespaces)))
		for _, ns := range l.Namespaces {
			e.Str(string(ns.Type))
			e.Str(ns.Path)
		}
		e.Bytes(l.Filter.Bytes())
		e.Strs(l.MaskedPaths)
		e.Strs(l.ReadonlyPaths)
	}
	e.Uint(uint64(len(c.Symlinks)))
	for _, s := range c.Symlinks {
		e.Str(s.Path)
		e.Str(s.Target)
	}
	e.Strs(c.ReadonlyOptional)
	e.Uint(uint64(len(c.Cleanup)))
	for _, x := range c.Cleanup {
		e.Str(string(x.Kind))
		e.Str(x.Path)
		e.Strs(x.Keep)
		e.Uint(uint64(len(x.KeepIDs)))
		for _, id := range x.KeepIDs {
			e.Uint(id.Dev)
			e.Uint(id.Ino)
			e.Uint(uint64(id.Type))
		}
		e.Strs(x.Skip)
		e.Str(x.Target)
		e.Str(x.Prefix)
		e.Uint(uint64(x.HashLen))
		e.Uint(uint64(len(x.Was)))
		for _, w := range x.Was {
			e.Str(w.Name)
			e.Uint(w.Dev)
			e.Uint(w.Ino)
			e.Uint(uint64(w.Size))
			e.Uint(uint64(w.Mtime))
			e.Uint(uint64(w.Ctime))
		}
		e.Uint(uint64(x.Since))
		e.Uint(uint64(x.Mode))
		// the session init's fallback runs an Anytime entry alone (cleanup.RunLasting)
		e.Bool(x.Anytime)
	}
	e.Bool(c.Egress != nil)
	if c.Egress != nil {
		e.Uint(uint64(len(c.Egress.CapturePorts)))
		for _, p := range c.Egress.CapturePorts {
			e.Uint(uint64(p))
		}
	}
	e.Uint(uint64(len(c.Publish)))
	for _, p := range c.Publish {
		e.Uint(uint64(p.Port))
	}
	e.Uint(uint64(len(c.HostPorts)))
	for _, p := range c.HostPorts {
		e.Uint(uint64(p))
	}
	e.Uint(uint64(len(c.Files)))
	for _, f := range c.Files {
		e.Str(f.Path)
		e.Str(f.Content)
		e.Uint(uint64(f.Mode))
	}
	e.Uint(uint64(len(c.UserCounts)))
	for _, u := range c.UserCounts {
		e.Str(u.Name)
		e.Uint(uint64(u.Max))
	}
	return e.B
}

// EncodeProcess is the encoding of a pooled command's process (DecodeProcess).
func EncodeProcess(p *specs.Process) []byte {
	e := &wire.Encoder{B: make([]byte, 0, 1024)}
	e.B = append(e.B, wireMagic...)
	encodeProcess(e, p)
	return e.B
}

func decodeIDMaps(d *wire.Decoder) []specs.LinuxIDMapping {
	n := d.Count(3)
	if n == 0 {
		return nil
	}
	out := make([]specs.LinuxIDMapping, n)
	for i := range out {
		out[i] = specs.LinuxIDMapping{ContainerID: d.Uint32(), HostID: d.Uint32(), Size: d.Uint32()}
	}
	return out
}

func decodeProcess(d *wire.Decoder) *specs.Process {
	if !d.Bool() {
		return nil
	}
	p := &specs.Process{User: specs.User{UID: d.Uint32(), GID: d.Uint32()}}
	if d.Bool() {
		u := d.Uint32()
		p.User.Umask = &u
	}
	p.Args = d.Strs()
	p.Env = d.Strs()
	p.Cwd = d.Str()
	if n := d.Count(3); n > 0 {
		p.Rlimits = make([]specs.POSIXRlimit, n)
		for i := range p.Rlimits {
			p.Rlimits[i] = specs.POSIXRlimit{Type: d.Str(), Hard: d.Uint(), Soft: d.Uint()}
		}
	}
	p.NoNewPrivileges = d.Bool()
	return p
}

// Decode reverses Encode. Decoding is bounded by the input: a count the rest cannot
// hold is an error, not an allocation. Errors wrap ErrMalformed, a filter that is not
// whole BPF instructions included.
func Decode(b []byte) (*Config, error) {
	d := &wire.Decoder{B: b}
	d.Magic(wireMagic)
	c := &Config{Process: decodeProcess(d), Hostname: d.Str()}
	if n := d.Count(4); n > 0 {
		c.Mounts = make([]specs.Mount, n)
		for i := range c.Mounts {
			c.Mounts[i] = specs.Mount{Destination: d.Str(), Type: d.Str(), Source: d.Str(), Options: d.Strs()}
		}
	}
	if d.Bool() {
		l := &Linux{UIDMappings: decodeIDMaps(d), GIDMappings: decodeIDMaps(d)}
		if n := d.Count(2); n > 0 {
			l.Namespaces = make([]specs.LinuxNamespace, n)
			for i := range l.Namespaces {
				l.Namespaces[i] = specs.LinuxNamespace{Type: specs.LinuxNamespaceType(d.Str()), Path: d.Str()}
			}
		}
		if f := d.Raw(); len(f) > 0 {
			p, err := seccomp.ParseProgram(f)
			if err != nil {
				d.Fail(fmt.Errorf("%w: %w", ErrMalformed, err))
			}
			l.Filter = p
		}
		l.MaskedPaths = d.Strs()
		l.ReadonlyPaths = d.Strs()
		c.Linux = l
	}
	if n := d.Count(2); n > 0 {
		c.Symlinks = make([]Symlink, n)
		for i := range c.Symlinks {
			c.Symlinks[i] = Symlink{Path: d.Str(), Target: d.Str()}
		}
	}
	c.ReadonlyOptional = d.Strs()
	if n := d.Count(7); n > 0 {
		c.Cleanup = make([]cleanup.Entry, n)
		for i := range c.Cleanup {
			x := cleanup.Entry{Kind: cleanup.Kind(d.Str()), Path: d.Str(), Keep: d.Strs()}
			if m := d.Count(3); m > 0 {
				x.KeepIDs = make([]cleanup.ID, m)
				for j := range x.KeepIDs {
					x.KeepIDs[j] = cleanup.ID{Dev: d.Uint(), Ino: d.Uint(), Type: uint32(d.Uint())}
				}
			}
			x.Skip, x.Target, x.Prefix = d.Strs(), d.Str(), d.Str()
			x.HashLen = int(d.Uint())
			if m := d.Count(6); m > 0 {
				x.Was = make([]cleanup.Stamp, m)
				for j := range x.Was {
					x.Was[j] = cleanup.Stamp{Name: d.Str(), Dev: d.Uint(), Ino: d.Uint(), Size: int64(d.Uint()), Mtime: int64(d.Uint()), Ctime: int64(d.Uint())}
				}
			}
			x.Since = int64(d.Uint())
			x.Mode = uint32(d.Uint())
			x.Anytime = d.Bool()
			c.Cleanup[i] = x
		}
	}
	if d.Bool() {
		c.Egress = &Egress{} // the rules stay with the owner
		if n := d.Count(1); n > 0 {
			c.Egress.CapturePorts = make([]uint16, n)
			for i := range c.Egress.CapturePorts {
				c.Egress.CapturePorts[i] = uint16(d.Uint32())
			}
		}
	}
	if n := d.Count(1); n > 0 {
		c.Publish = make([]Publish, n)
		for i := range c.Publish {
			c.Publish[i].Port = uint16(d.Uint32()) // the host side stays with the owner
		}
	}
	if n := d.Count(1); n > 0 {
		c.HostPorts = make([]uint16, n)
		for i := range c.HostPorts {
			c.HostPorts[i] = uint16(d.Uint32())
		}
	}
	if n := d.Count(3); n > 0 {
		c.Files = make([]File, n)
		for i := range c.Files {
			c.Files[i] = File{Path: d.Str(), Content: d.Str(), Mode: d.Uint32()}
		}
	}
	if n := d.Count(2); n > 0 {
		c.UserCounts = make([]UserCount, n)
		for i := range c.UserCounts {
			c.UserCounts[i] = UserCount{Name: d.Str(), Max: int64(d.Uint())}
		}
	}
	if err := d.End("config"); err != nil {
		return nil, err
	}
	return c, nil
}

// DecodeProcess reverses EncodeProcess. Errors wrap ErrMalformed.
func DecodeProcess(b []byte) (*specs.Process, error) {
	d := &wire.Decoder{B: b}
	d.Magic(wireMagic)
	p := decodeProcess(d)
	if err := d.End("process"); err != nil {
		return nil, err
	}
	return p, nil
}
