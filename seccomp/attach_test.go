package seccomp

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// attachChild loads the program in the file $GOSBX_SECCOMP_ATTACH_PROG once, as a
// launch does (no_new_privs, then Load: seccomp(2) with TSYNC), and prints how long
// the seccomp(2) call took, in nanoseconds.
func attachChild() int {
	b, err := os.ReadFile(os.Getenv("GOSBX_SECCOMP_ATTACH_PROG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p, err := ParseProgram(b)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	start := time.Now()
	err = Load(p)
	d := time.Since(start)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(d.Nanoseconds())
	return 0
}

// TestAttachCost measures the kernel's cost of attaching the old generator's and the
// new programs (seccomp(2) SECCOMP_SET_MODE_FILTER: checking the classic BPF,
// converting it to eBPF, JIT-compiling it, preparing the constant-action cache), each
// in a fresh child (attached filters stack), the variants interleaved. A measurement,
// not a check: it runs with GOSBX_MEASURE=1 (docs/decisions.md, "Speed, eighth
// attempt: the filter's length").
func TestAttachCost(t *testing.T) {
	if os.Getenv("GOSBX_MEASURE") != "1" {
		t.Skip("a measurement: GOSBX_MEASURE=1")
	}
	rounds := 200
	if v, err := strconv.Atoi(os.Getenv("GOSBX_MEASURE_ROUNDS")); err == nil {
		rounds = v
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	specs := launchSpecs(t)
	type variant struct {
		name string
		file string
		n    int
		ns   []int64
	}
	var vs []*variant
	for _, name := range []string{"agent", "agent/root", "agent/export"} {
		s := specs[name]
		newP, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			tag string
			p   Program
		}{{"old", refProgram(t, s)}, {"new", newP}} {
			f := t.TempDir() + "/prog"
			if err := os.WriteFile(f, v.p.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			vs = append(vs, &variant{name: name + " " + v.tag, file: f, n: len(v.p)})
		}
	}
	// the floor: a one-instruction program (the system call, TSYNC, a filter at all)
	floor := t.TempDir() + "/prog"
	if err := os.WriteFile(floor, Program{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	vs = append(vs, &variant{name: "ret ALLOW", file: floor, n: 1})
	// length alone: 128 returns (the kernel's cache emulation stops at the first)
	flat := make(Program, 128)
	for i := range flat {
		flat[i] = unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}
	}
	flatFile := t.TempDir() + "/prog"
	if err := os.WriteFile(flatFile, flat.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	vs = append(vs, &variant{name: "128 × ret ALLOW", file: flatFile, n: len(flat)})
	for range rounds {
		for _, v := range vs {
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=attach", "GOSBX_SECCOMP_ATTACH_PROG="+v.file)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v", v.name, err)
			}
			ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			v.ns = append(v.ns, ns)
		}
	}
	for _, v := range vs {
		slices.Sort(v.ns)
		q := func(f float64) float64 { return float64(v.ns[int(f*float64(len(v.ns)-1))]) / 1000 }
		t.Logf("%-18s %4d instructions: attach median %.1f µs (p25 %.1f, p75 %.1f), %d children", v.name, v.n, q(0.5), q(0.25), q(0.75), len(v.ns))
	}
}

// BenchmarkCompile is seccomp.Compile of the agent profile with a root caller's rules
// (what a launch with a policy's own rules compiles; the built-ins are compiled ahead
// of time), the old generator beside it.
func BenchmarkCompile(b *testing.B) {
	s := launchSpecs(b)["agent/root"]
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Compile(s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("old", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			refProgram(b, s)
		}
	})
}
