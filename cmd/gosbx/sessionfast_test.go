package main

import (
	"reflect"
	"testing"
)

// parseSessionExec takes only what a session request carries, in the long forms, and
// leaves every other command line to cobra.
func TestParseSessionExec(t *testing.T) {
	ok := []struct {
		args   []string
		want   sessionExec
		status string
		cmd    []string
	}{
		{[]string{"exec", "--session", "s", "--", "/bin/true"}, sessionExec{name: "s"}, "", []string{"/bin/true"}},
		{[]string{"exec", "--session=s", "true", "--tty"}, sessionExec{name: "s"}, "", []string{"true", "--tty"}},
		{[]string{"exec", "--env", "A=1", "--session", "s", "--env=B=--x", "--chdir", "d", "--timeout=5s", "--status-fd", "3", "--detach", "--", "sh", "-c", "x"},
			sessionExec{name: "s", env: []string{"A=1", "B=--x"}, chdir: "d", timeout: "5s", detach: true}, "3", []string{"sh", "-c", "x"}},
		{[]string{"exec", "--session", "s", "--tty"}, sessionExec{name: "s", tty: true}, "", []string{}},
		{[]string{"exec", "--session", "--tty", "x"}, sessionExec{name: "--tty"}, "", []string{"x"}},
	}
	for _, tc := range ok {
		r, status, cmd, parsed := parseSessionExec(tc.args)
		if !parsed || !reflect.DeepEqual(r, tc.want) || status != tc.status || !reflect.DeepEqual(cmd, tc.cmd) {
			t.Errorf("%q: got %+v %q %q %v; want %+v %q %q", tc.args, r, status, cmd, parsed, tc.want, tc.status, tc.cmd)
		}
	}
	cobra := [][]string{
		{"exec", "--", "true"},                          // no session: a cold launch
		{"exec", "--session", "s", "--rw", "x", "true"}, // a widening flag: cobra's error message
		{"exec", "--session", "s", "-h"},
		{"exec", "--session", "s", "--help"},
		{"exec", "--session"},                       // no value
		{"exec", "--session", "s", "--timeout"},     // no value
		{"exec", "--session", "s", "--detach=true"}, // a bool with a value
		{"exec", "--session="},
		{"session", "exec", "--session", "s"},
		{"exec"},
	}
	for _, args := range cobra {
		if r, _, _, parsed := parseSessionExec(args); parsed {
			t.Errorf("%q: parsed (%+v), want it left to cobra", args, r)
		}
	}
}
