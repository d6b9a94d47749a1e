package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Attack review round three, F3: files a commit-mode sandbox plants for every later
// launch to parse cost bounded work. Four repositories with a sparse 530 MB index (a
// header of no entries, then zeros: no extension git writes) cost main ~1 GB and 9 s
// per launch, and still ran; each later launch now refuses the index (125, naming
// it) at once. Four with a valid 100 MiB optional extension are past the launch's
// read budget (256 MiB in all), named. Run under a 900 MiB address-space limit (a Go binary reserves ~800 MiB at start) and a
// time bound.
func TestPlantedIndexesBounded(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		zeros := []byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00")
		ext := append(append([]byte{}, zeros...), "ZZZZ\x06\x40\x00\x00"...)
		for _, tc := range []struct {
			name string
			head []byte
			size int64
			want string
		}{{"zeros", zeros, 530000000, "not one git writes"}, {"budget", ext, int64(len(ext)) + 100<<20 + 20, "MiB read"}} {
			for _, d := range []string{".", "s1", "s1/s2", "s3"} {
				dir := filepath.Join(s.ws, d)
				if tc.name == "zeros" {
					s.newRepo(dir, "r")
				}
				p := filepath.Join(dir, ".git", "index")
				must(t, os.WriteFile(p, tc.head, 0o644))
				must(t, os.Truncate(p, tc.size))
				s.chown(p)
			}
			ctx := s.limitCtx(runLimit)
			cmd := s.command(ctx, "--policy", s.commitPolicy(), "--", "true")
			cmd.Args = append([]string{"prlimit", "--as=943718400", "--", cmd.Path}, cmd.Args[1:]...)
			cmd.Path = "/usr/bin/prlimit"
			r := s.runCmd(ctx, cmd)
			if r.code != 125 || !strings.Contains(r.stderr, "/.git/index") || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%s: planted indexes: want 125 naming an index and %q\n%v", tc.name, tc.want, r)
			}
			if r.elapsed > 3*time.Second {
				t.Errorf("%s: the launch took %v", tc.name, r.elapsed)
			}
		}
	})
}
