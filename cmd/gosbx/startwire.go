package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/internal/rawjson"
	"github.com/gosbx/gosbx/policy"
)

// A session's supervisor decodes its start data (JSON) once, and encoding/json builds a
// field table and an encoder for every type reachable from the one it decodes into, kept
// for the process's life, as is all else it allocates (no collection below a 4 MiB heap).
// So the start data names small types: the limits rather than the runtime-spec's
// resources tree (53 KiB of tables), and the not-found context as raw JSON, decoded only
// when a command first exits 127 (20 KiB of tables, and the caller's environment).
// docs/decisions.md, "Memory: idle sessions".

// resourceLimits are the cgroup limits a policy sets (policy/resources.go: memory and
// memory+swap, pids, CPU quota and period), as the start data carries them.
type resourceLimits struct {
	Memory    *int64  `json:",omitempty"`
	Swap      *int64  `json:",omitempty"`
	Pids      *int64  `json:",omitempty"`
	CPUQuota  *int64  `json:",omitempty"`
	CPUPeriod *uint64 `json:",omitempty"`
	// MemorySet, PidsSet and CPUSet say which sections r had (a section without
	// any of these values still counts)
	MemorySet, PidsSet, CPUSet bool `json:",omitempty"`
}

// limitsOf is r as resourceLimits; an error when r holds more than they carry (a field
// the supervisor would otherwise lose without a word).
func limitsOf(r *specs.LinuxResources) (*resourceLimits, error) {
	l := &resourceLimits{MemorySet: r.Memory != nil, PidsSet: r.Pids != nil, CPUSet: r.CPU != nil}
	if r.Memory != nil {
		l.Memory, l.Swap = r.Memory.Limit, r.Memory.Swap
	}
	if r.Pids != nil {
		l.Pids = r.Pids.Limit
	}
	if r.CPU != nil {
		l.CPUQuota, l.CPUPeriod = r.CPU.Quota, r.CPU.Period
	}
	if !reflect.DeepEqual(l.resources(), r) {
		return nil, errors.New("the session's cgroup resources hold more than memory, memory+swap, pids and the CPU quota and period, which are all a session's supervisor is handed")
	}
	return l, nil
}

// resources is l as the runtime-spec's resources.
func (l *resourceLimits) resources() *specs.LinuxResources {
	r := &specs.LinuxResources{}
	if l.MemorySet {
		r.Memory = &specs.LinuxMemory{Limit: l.Memory, Swap: l.Swap}
	}
	if l.PidsSet {
		r.Pids = &specs.LinuxPids{Limit: l.Pids}
	}
	if l.CPUSet {
		r.CPU = &specs.LinuxCPU{Quota: l.CPUQuota, Period: l.CPUPeriod}
	}
	return r
}

// lazyNotFound returns the not-found context encoded in b, decoded at the first call
// (an empty one when b is empty or does not decode: the hint is then left out).
func lazyNotFound(b json.RawMessage) func() policy.NotFoundContext {
	return sync.OnceValue(func() policy.NotFoundContext {
		var c policy.NotFoundContext
		if len(b) > 0 && json.Unmarshal(b, &c) == nil {
			rawjson.Unescaped(&c)
		}
		return c
	})
}

// maxStartData bounds the start data's length as read (a config of thousands of binds
// is ~1 MiB).
const maxStartData = 64 << 20

// framed is b behind its length (8 bytes, little-endian): the supervisor reads it into
// one buffer of that size (readFramed), where a json.Decoder's doubling buffer left
// ~30 KiB of garbage in a process that is never collected.
func framed(b []byte) []byte {
	return append(binary.LittleEndian.AppendUint64(make([]byte, 0, 8+len(b)), uint64(len(b))), b...)
}

// readFramed reads what framed wrote. Errors: a short read, a length over maxStartData.
func readFramed(r io.Reader) ([]byte, error) {
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("read the start data's length: %w", err)
	}
	size := binary.LittleEndian.Uint64(n[:])
	if size > maxStartData {
		return nil, fmt.Errorf("start data of %d bytes: over %d", size, maxStartData)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("read the start data (%d bytes): %w", size, err)
	}
	return b, nil
}
