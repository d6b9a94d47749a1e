package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Refused invocations exit 125 with a message on stderr, and the command
// never runs: it would print a marker and create marker files.
func TestBadInput(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.chown(s.base) // the parent is writable by the caller: a marker could land there
		file := s.writeWS("plain-file", "x", 0o644)
		must(t, os.Symlink("/", filepath.Join(s.base, "rootlink")))
		must(t, os.Symlink("/etc", filepath.Join(s.base, "etclink")))
		markers := func(name string) []string {
			return []string{filepath.Join(s.ws, "ran-"+name), filepath.Join(s.base, "ran-"+name), "/var/tmp/gosbx-it-ran-" + s.id + "-" + name}
		}
		probe := func(name string) []string {
			m := markers(name)
			return []string{shellPath, "-c", `echo GOSBX-IT-RAN; touch "$@"`, "_", m[0], m[1], m[2]}
		}
		ws := func(dir string) []string { return []string{"exec", "--workspace", dir} }
		join := func(parts ...[]string) []string {
			var out []string
			for _, p := range parts {
				out = append(out, p...)
			}
			return out
		}
		dd := []string{"--"}
		cases := []struct {
			name string
			args []string
		}{
			{"missing-workspace", join(ws(filepath.Join(s.base, "missing")), dd, probe("missing-workspace"))},
			{"file-workspace", join(ws(file), dd, probe("file-workspace"))},
			{"root-workspace", join(ws("/"), dd, probe("root-workspace"))},
			{"root-workspace-slashes", join(ws("//"), dd, probe("root-workspace-slashes"))},
			{"root-via-symlink", join(ws(filepath.Join(s.base, "rootlink")), dd, probe("root-via-symlink"))},
			{"etc-via-symlink", join(ws(filepath.Join(s.base, "etclink")), dd, probe("etc-via-symlink"))},
			{"usr-dotdot", join(ws("/etc/../usr/"), dd, probe("usr-dotdot"))},
			{"missing-ro", join(ws(s.ws), []string{"--ro", filepath.Join(s.base, "no-such-ro")}, dd, probe("missing-ro"))},
			{"missing-rw", join(ws(s.ws), []string{"--rw", filepath.Join(s.base, "no-such-rw")}, dd, probe("missing-rw"))},
			{"unknown-flag", join(ws(s.ws), []string{"--gosbx-it-no-such-flag"}, dd, probe("unknown-flag"))},
			{"bad-net", join(ws(s.ws), []string{"--net", "gosbx-it-bogus"}, dd, probe("bad-net"))},
			{"bad-timeout", join(ws(s.ws), []string{"--timeout", "soon"}, dd, probe("bad-timeout"))},
			{"no-command", ws(s.ws)},
			{"no-command-after-dashes", join(ws(s.ws), dd)},
			{"unknown-subcommand", []string{"gosbx-it-no-such-subcommand"}},
		}
		for _, root := range []string{"/usr", "/etc", "/proc", "/sys", "/dev", "/bin", "/var", "/run", "/tmp", "/lib", "/sbin"} {
			name := "system-root" + strings.ReplaceAll(root, "/", "-")
			cases = append(cases, struct {
				name string
				args []string
			}{name, join(ws(root), dd, probe(name))})
		}
		if c.uid == 0 {
			cases = append(cases, struct {
				name string
				args []string
			}{"home-workspace", join(ws(c.home), dd, probe("home-workspace"))})
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ss := *s
				ss.t = t
				for _, m := range markers(tc.name) {
					t.Cleanup(func() { os.Remove(m) })
				}
				ctx := ss.limitCtx(runLimit)
				r := ss.runCmd(ctx, ss.rawCommand(ctx, tc.args...))
				if r.code != 125 {
					t.Errorf("exit %d, want 125\n%v", r.code, r)
				}
				if strings.TrimSpace(r.stderr) == "" {
					t.Errorf("no message on stderr")
				}
				if strings.Contains(r.stdout, "GOSBX-IT-RAN") {
					t.Errorf("the command ran")
				}
				for _, m := range markers(tc.name) {
					if _, err := os.Lstat(m); err == nil {
						t.Errorf("the command ran: %s exists", m)
					}
				}
			})
		}
	})
}

// version and help work.
func TestVersionAndHelp(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"version"}, ""},
		{[]string{"help"}, "exec"},
		{[]string{"exec", "--help"}, "--workspace"},
	} {
		ctx := s.limitCtx(runLimit)
		r := s.runCmd(ctx, s.rawCommand(ctx, tc.args...))
		if r.code != 0 {
			t.Errorf("gosbx %v: exit %d\n%v", tc.args, r.code, r)
		}
		out := r.stdout + r.stderr
		if strings.TrimSpace(out) == "" || !strings.Contains(out, tc.want) {
			t.Errorf("gosbx %v: output lacks %q:\n%v", tc.args, tc.want, r)
		}
	}
}
