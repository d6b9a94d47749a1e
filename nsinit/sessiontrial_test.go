package nsinit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/egress"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// TestSessionGuardLibrary: a library session (NewSession of a config from
// policy.Compile) refuses a command while a repository made on the host between its
// commands is in its workspace, as the CLI's session does (new-user trial, item 1): the
// command never runs, so the hook it would plant is not on the host. A repository a
// command makes is its own: the next command runs.
func TestSessionGuardLibrary(t *testing.T) {
	ws := testWorkspace(t)
	cfg := compile(t, policy.Options{Args: []string{"true"}, Workspace: ws}, nil)
	s, err := NewSession(cfg)
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer s.Close(time.Second)
	run := func(script string) (string, error) {
		var out bytes.Buffer
		c := s.Command(sessionProc(s, "sh", "-c", script))
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		return out.String(), err
	}
	if out, err := run("true"); err != nil {
		t.Fatalf("first command: %v %q", err, out)
	}
	// a repository the command makes is its own, as in a one-shot sandbox
	if out, err := run("mkdir -p own/.git/hooks"); err != nil {
		t.Fatalf("a command making a repository: %v %q", err, out)
	}
	if out, err := run("true"); err != nil {
		t.Fatalf("the command after one that made a repository: %v %q (a command's own repository is not refused)", err, out)
	}
	// the host makes one between commands
	if err := os.MkdirAll(filepath.Join(ws, "hostrepo", ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(ws, "hostrepo", ".git", "hooks", "post-checkout")
	for i := range 2 {
		out, err := run("echo '#!/bin/sh' > hostrepo/.git/hooks/post-checkout && echo planted")
		var se *SetupError
		if !errors.As(err, &se) || se.Step != "protected" {
			t.Fatalf("command %d with a host-made repository in the workspace: %v %q, want a *SetupError at step protected", i, err, out)
		}
		if !strings.Contains(se.Error(), filepath.Join(ws, "hostrepo", ".git")) || !strings.Contains(se.Error(), "NewSession") {
			t.Errorf("the refusal names neither the repository nor the restart: %v", se)
		}
		if _, err := os.Lstat(hook); err == nil {
			t.Fatalf("the command planted %s on the host", hook)
		}
	}
	// a config without a guard (as config.FromSpec gives) is not searched: the
	// contract is the policy's protected paths
	if cfg.Guard == nil {
		t.Fatal("policy.Compile gave a config without a Guard")
	}
}

// TestSessionCmdNetHooksRefused: a session command with NetEvents or NetDenied set is
// refused at Start with an error naming NewSessionNet, not run with its hooks never
// called (new-user trial, item 5): the command did not run (its file is not on the host).
func TestSessionCmdNetHooksRefused(t *testing.T) {
	ws := testWorkspace(t)
	cfg := compile(t, policy.Options{Args: []string{"true"}, Workspace: ws}, nil)
	s, err := NewSession(cfg)
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer s.Close(time.Second)
	for i, set := range []func(*Cmd){
		func(c *Cmd) { c.NetEvents = func(egress.Event) {} },
		func(c *Cmd) { c.NetDenied = func(string) {} },
	} {
		mark := filepath.Join(ws, "ran")
		c := s.Command(sessionProc(s, "touch", mark))
		set(c)
		err := c.Run()
		if err == nil || !strings.Contains(err.Error(), "NewSessionNet") {
			t.Errorf("hook %d: Run = %v, want an error naming NewSessionNet", i, err)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Fatalf("hook %d: the command ran", i)
		}
	}
	c := s.Command(sessionProc(s, "true"))
	if err := c.Run(); err != nil {
		t.Errorf("a command without the hooks after: %v", err)
	}
}

// TestCgroupRefusalHint: a launch whose required limits cannot be applied (no cgroup:
// uid 65534 on a v1 host) gives a *SetupError at step cgroup whose Hint names the fix
// both as the flag and as the library's field (new-user trial, item 11: Hint was empty
// and the text named only CLI flags).
func TestCgroupRefusalHint(t *testing.T) {
	old := newCgroup
	t.Cleanup(func() { newCgroup = old })
	newCgroup = func(*specs.LinuxResources, cgroup.Options) (cgroup.Group, error) {
		return nil, fmt.Errorf("%w: unprivileged callers cannot create v1 groups", cgroup.ErrUnavailable)
	}
	limit := int64(64 << 20)
	spec := &config.Config{Linux: &config.Linux{Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}}},
		Limits: config.Limits{Required: []string{"memory"}}}
	err := (&owner{}).makeGroup(spec, false)
	var se *SetupError
	if !errors.As(err, &se) || se.Step != "cgroup" {
		t.Fatalf("makeGroup without a cgroup: %v, want a *SetupError at step cgroup", err)
	}
	for _, want := range []string{"--limits best-effort", "config.Limits.BestEffort", `policy.Resources.Limits "best-effort"`} {
		if !strings.Contains(se.Hint, want) {
			t.Errorf("Hint %q does not name %s", se.Hint, want)
		}
	}
	// ForCLI: the same fix in the CLI's words, no library field (trial 2026-12-02, T11)
	ForCLI(err)
	if strings.Contains(se.Hint, "config.") || strings.Contains(se.Hint, "policy.") || !strings.Contains(se.Hint, "limits: best-effort") {
		t.Errorf("ForCLI's Hint %q: want the flag and the policy file's key only", se.Hint)
	}
	if strings.Contains(se.Err.Error(), "--limits") {
		t.Errorf("the cause %q carries the fix (it belongs in Hint)", se.Err)
	}
}
