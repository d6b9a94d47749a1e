package policy

import (
	"reflect"
	"testing"

	"github.com/gosbx/gosbx/seccomp"
)

// compiled is what Build compiled before filters were generated: LaunchSeccomp's
// source and its program, at run time.
func compiled(t *testing.T, sc *seccomp.Config, mode string, callerUID int, uid, gid uint32) (any, seccomp.Program) {
	t.Helper()
	source, err := LaunchSeccomp(sc, mode, callerUID, uid, gid).Spec()
	if err != nil {
		t.Fatal(err)
	}
	prog, err := seccomp.Compile(source)
	if err != nil {
		t.Fatal(err)
	}
	return source, prog
}

// TestBuiltinFiltersCurrent: every built-in input (each seccomp profile, also as a nil
// section and an empty profile name; network none, proxy and host; a root caller whose
// command is 0:0 inside and a non-root caller) has a generated filter, and it is the
// source and program compiled now, instruction for instruction. A profile, rule or
// compiler change without `go generate ./policy` fails here.
func TestBuiltinFiltersCurrent(t *testing.T) {
	type input struct {
		name string
		sc   *seccomp.Config
	}
	var inputs []input
	for _, p := range seccomp.Profiles {
		inputs = append(inputs, input{p, &seccomp.Config{Profile: p}})
	}
	inputs = append(inputs, input{"nil", nil}, input{"empty", &seccomp.Config{}})
	want := 0
	for _, in := range inputs {
		for _, mode := range []string{NetNone, NetProxy, NetHost} {
			for _, caller := range []int{0, 1000, 65534} {
				f := findBuiltinFilter(in.sc, mode, caller, 0, 0)
				if f == nil {
					t.Errorf("%s, network %s, caller %d: no generated filter (run go generate ./policy)", in.name, mode, caller)
					continue
				}
				source, prog := compiled(t, in.sc, mode, caller, 0, 0)
				if !reflect.DeepEqual(f.source, source) {
					t.Errorf("%s, network %s, caller %d: the generated source differs from the compiled one (run go generate ./policy)", in.name, mode, caller)
				}
				if !reflect.DeepEqual(f.prog, prog) {
					t.Errorf("%s, network %s, caller %d: the generated program (%d instructions) differs from the compiled one (%d) (run go generate ./policy)",
						in.name, mode, caller, len(f.prog), len(prog))
				}
				gotSource, gotProg, err := launchFilter(in.sc, mode, caller, 0, 0)
				if err != nil || gotSource == f.source || !reflect.DeepEqual(gotSource, f.source) || !reflect.DeepEqual(gotProg, f.prog) {
					t.Errorf("%s, network %s, caller %d: launchFilter did not return a copy of the generated filter (err %v)", in.name, mode, caller, err)
				}
				want++
			}
		}
	}
	if want == 0 || len(builtinFilters) != 2*2*len(seccomp.Profiles) {
		t.Errorf("%d generated filters, want one per profile, network host or not, root caller or not (%d)", len(builtinFilters), 2*2*len(seccomp.Profiles))
	}
}

// TestLaunchFilterNotBuiltin: inputs that are no built-in's are compiled at run time,
// to what the compiler gives; their programs differ from the built-ins', so a lookup
// that took them for a built-in would be caught.
func TestLaunchFilterNotBuiltin(t *testing.T) {
	own := &seccomp.Config{Rules: []seccomp.Rule{{Syscalls: []string{"mkdir"}, Action: "errno"}}}
	for _, tc := range []struct {
		name      string
		sc        *seccomp.Config
		caller    int
		uid, gid  uint32
		builtinOf *seccomp.Config
	}{
		{"a policy's own rule", own, 1000, 1000, 1000, nil},
		{"a policy's own rule, root", own, 0, 0, 0, nil},
		{"root caller, --uid 1000", nil, 0, 1000, 0, nil},
		{"root caller, --gid 5", nil, 0, 0, 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if findBuiltinFilter(tc.sc, NetNone, tc.caller, tc.uid, tc.gid) != nil {
				t.Fatal("taken for a built-in input")
			}
			source, prog, err := launchFilter(tc.sc, NetNone, tc.caller, tc.uid, tc.gid)
			if err != nil {
				t.Fatal(err)
			}
			wantSource, wantProg := compiled(t, tc.sc, NetNone, tc.caller, tc.uid, tc.gid)
			if !reflect.DeepEqual(source, wantSource) || !reflect.DeepEqual(prog, wantProg) {
				t.Fatal("not the compiled filter")
			}
			b := findBuiltinFilter(nil, NetNone, tc.caller, 0, 0)
			if reflect.DeepEqual(prog, b.prog) {
				t.Fatal("the same program as the built-in's: the test cannot tell them apart")
			}
		})
	}
	bad := &seccomp.Config{Rules: []seccomp.Rule{{Syscalls: []string{"nosuchcall"}, Action: "errno"}}}
	if _, _, err := launchFilter(bad, NetNone, 1000, 1000, 1000); err == nil {
		t.Fatal("an unknown call compiled")
	}
	if _, _, err := launchFilter(&seccomp.Config{Profile: "nosuch"}, NetNone, 1000, 1000, 1000); err == nil {
		t.Fatal("an unknown profile compiled")
	}
}

// TestBuildBuiltinFilters: Compile (Effective, then Build) of each built-in policy, as
// root and not, network none and host, gives the filter compiled at run time; the
// program is the config's own (a write to it leaves the next one's intact).
func TestBuildBuiltinFilters(t *testing.T) {
	ws := benchWorkspace(t, t.TempDir(), "plain")
	for _, name := range Profiles() {
		for _, root := range []bool{false, true} {
			for _, mode := range []string{NetNone, NetHost} {
				h := fakeHost(ws)
				if root {
					h.UID, h.GID, h.Root = 0, 0, true
				}
				p, _ := Builtin(name)
				o := Options{Policy: p, Workspace: ws, Net: mode, Args: []string{"/bin/true"}}
				cfg, err := Compile(o, h)
				if err != nil && name == "strict" && mode == NetHost {
					continue // strict refuses the host network
				}
				if err != nil {
					t.Fatalf("%s root=%v %s: %v", name, root, mode, err)
				}
				uid, gid := cfg.Process.User.UID, cfg.Process.User.GID
				wantSource, wantProg := compiled(t, p.Seccomp, mode, h.UID, uid, gid)
				if !reflect.DeepEqual(any(cfg.Linux.Seccomp), wantSource) || !reflect.DeepEqual(cfg.Linux.Filter, wantProg) {
					t.Errorf("%s root=%v %s: the config's filter is not the compiled one", name, root, mode)
				}
				cfg.Linux.Filter[0].K = 0xdead
				// the source too: each slice, pointer and element a caller could write
				src := cfg.Linux.Seccomp
				if src.DefaultErrnoRet != nil {
					*src.DefaultErrnoRet = 99
				}
				src.Architectures[0] = "SCMP_ARCH_X86"
				for i := range src.Syscalls {
					src.Syscalls[i].Names[0] = "getpid"
					if src.Syscalls[i].ErrnoRet != nil {
						*src.Syscalls[i].ErrnoRet = 0
					}
					for j := range src.Syscalls[i].Args {
						src.Syscalls[i].Args[j].Value = 0
					}
				}
				src.Syscalls = src.Syscalls[:1]
				again, err := Compile(o, h)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(again.Linux.Filter, wantProg) {
					t.Errorf("%s root=%v %s: a write to one config's filter changed the next one's", name, root, mode)
				}
				if !reflect.DeepEqual(any(again.Linux.Seccomp), wantSource) {
					t.Errorf("%s root=%v %s: a write to one config's filter source changed the next one's", name, root, mode)
				}
				if prog, err := seccomp.Compile(again.Linux.Seccomp); err != nil || !reflect.DeepEqual(prog, wantProg) {
					t.Errorf("%s root=%v %s: the next config's source compiles to another filter (err %v)", name, root, mode, err)
				}
			}
		}
	}
}
