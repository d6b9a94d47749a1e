package policy

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestBoundsCheck: a request is held to the rules of gosbx exec's flags, as the
// profile's bounds record them: strict refuses --env, a timeout only shortens, a
// working directory under /proc is refused, a relative one is taken from the workspace.
func TestBoundsCheck(t *testing.T) {
	h := Host{UID: 1000, Home: "/home/u", Cwd: t.TempDir()}
	bounds := func(profile string, timeout time.Duration) Bounds {
		p, ok := Builtin(profile)
		if !ok {
			t.Fatal(profile)
		}
		eff, err := Effective(Options{Policy: p, Workspace: h.Cwd, Timeout: timeout}, h)
		if err != nil {
			t.Fatal(err)
		}
		return eff.Bounds()
	}
	strict, agent := bounds("strict", 0), bounds("agent", time.Minute)
	for _, c := range []struct {
		b       Bounds
		r       Request
		wantErr string
		cwd     string
	}{
		{strict, Request{Env: []string{"LD_PRELOAD=/x"}}, "environment.allow_extra", ""},
		{strict, Request{Chdir: "sub", Timeout: time.Hour}, "", h.Cwd + "/sub"},
		{agent, Request{Env: []string{"A=b"}, Timeout: 30 * time.Second}, "", ""},
		{agent, Request{Env: []string{"=b"}}, "want KEY=VALUE", ""},
		{agent, Request{Timeout: 2 * time.Minute}, "may only shorten", ""},
		{agent, Request{Chdir: "/proc/1"}, "under /proc", ""},
		{agent, Request{Chdir: "../../../../../../../../proc/self"}, "under /proc", ""},
	} {
		cwd, err := c.b.Check(c.r)
		if c.wantErr == "" && (err != nil || cwd != c.cwd) {
			t.Errorf("%+v: got %q, %v; want %q", c.r, cwd, err, c.cwd)
		}
		if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%+v: got %v, want an error with %q", c.r, err, c.wantErr)
		}
	}
}

// TestNegativeTimeoutRefused: Options.Timeout below 0 is an *Error at field timeout, as
// gosbx exec refuses --timeout -1s (new-user trial, item 11: it compiled silently).
func TestNegativeTimeoutRefused(t *testing.T) {
	h := Host{UID: 1000, Home: "/home/u", Cwd: t.TempDir()}
	_, err := Effective(Options{Workspace: h.Cwd, Timeout: -time.Second}, h)
	var pe *Error
	if !errors.As(err, &pe) || pe.Field != "timeout" {
		t.Fatalf("Options.Timeout -1s: %v, want a *policy.Error at field timeout", err)
	}
}
