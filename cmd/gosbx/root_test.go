package main

import (
	"bytes"
	"testing"
)

// execOut runs root with args and returns what it printed and the error.
func execOut(t *testing.T, args []string, full bool) string {
	t.Helper()
	var root = newRootCmd(args)
	if full {
		root = newRootCmd(nil) // the whole tree, as any other first argument builds
	}
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		out.WriteString("error: " + err.Error())
	}
	return out.String()
}

// TestRootLazy: `gosbx exec` and `gosbx version` build only their own command, and
// what they print (help, usage errors) is what the whole tree prints.
func TestRootLazy(t *testing.T) {
	for _, name := range []string{"exec", "version"} {
		if got := newRootCmd([]string{name, "--help"}).Commands(); len(got) != 1 || got[0].Name() != name {
			t.Errorf("newRootCmd(%s) built %d commands; want only %s", name, len(got), name)
		}
	}
	if got := len(newRootCmd([]string{"policy"}).Commands()); got < 5 {
		t.Errorf("newRootCmd(policy) built %d commands; want the whole tree", got)
	}
	for _, args := range [][]string{
		{"exec", "--help"}, {"exec", "-h"}, {"exec", "--bogus"}, {"exec", "--net", "host", "--help"},
		{"version", "--help"}, {"version", "extra"}, {"version", "--bogus"},
	} {
		lazy, full := execOut(t, args, false), execOut(t, args, true)
		if lazy != full {
			t.Errorf("%q prints\n%s\nwith the whole tree:\n%s", args, lazy, full)
		}
		if lazy == "" {
			t.Errorf("%q printed nothing", args)
		}
	}
}
