package main

import (
	"strings"
	"testing"

	"github.com/gosbx/gosbx/policy"
)

// go itself with no cache bound gets the note naming --cache and --policy build; a
// shell running go, or GOCACHE set inside, does not (exit 0 paths of the trial: each
// `gosbx exec -- go test` under agent built everything again, silently).
func TestGoCacheNote(t *testing.T) {
	p := &policy.Policy{} // no cache: agent's default
	n := goCacheNote(p, []string{"/usr/local/go/bin/go", "test", "./..."}, []string{"PATH=/usr/bin"})
	for _, w := range []string{"build cache starts empty", "--cache", "--policy build"} {
		if !strings.Contains(n, w) {
			t.Errorf("note %q: want %q", n, w)
		}
	}
	for _, args := range [][]string{{"go", "build"}, {"go", "-C", "sub", "vet", "./..."}, {"go", "-C=sub", "run", "."}, {"go", "install"}, {"go", "tool", "x"}} {
		if goCacheNote(p, args, nil) == "" {
			t.Errorf("%q: no note", args)
		}
	}
	for name, c := range map[string]struct{ args, env []string }{
		"a shell":     {[]string{"sh", "-c", "go test"}, nil},
		"GOCACHE set": {[]string{"go", "build"}, []string{"GOCACHE=/work/.gocache"}},
		"gofmt":       {[]string{"gofmt", "-l"}, nil},
		"go version":  {[]string{"go", "version"}, nil},
		"go env":      {[]string{"/usr/local/go/bin/go", "env", "GOCACHE"}, nil},
		"go -C env":   {[]string{"go", "-C", "build", "env"}, nil},
		"go alone":    {[]string{"go"}, nil},
		"no command":  {nil, nil},
	} {
		if n := goCacheNote(p, c.args, c.env); n != "" {
			t.Errorf("%s: note %q, want none", name, n)
		}
	}
}
