package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of a session's repository guard from attack review 15 (F1, F3, F5, F7): each
// plants (or would) a hook in a repository the session's mounts do not guard, and checks
// on the host that the request was refused and nothing was planted.

// plantHook is the script that plants a post-commit hook in the repository at rel (from
// the command's directory).
func plantHook(rel string) string {
	return "printf '#!/bin/sh\\nexit 0\\n' > " + rel + "/.git/hooks/post-commit && chmod +x " + rel + "/.git/hooks/post-commit"
}

// mkdirOwned makes dir (and its missing parents) owned by the caller.
func (e *sessionEnv) mkdirOwned(dir string) {
	e.t.Helper()
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
	}
	must(e.t, os.MkdirAll(dir, 0o755))
	for _, d := range missing {
		e.chown(d)
	}
}

// wantGuardRefused checks that r is the guard's refusal naming git, and that no hook was
// planted there on the host.
func wantGuardRefused(t *testing.T, r result, git, what string) {
	t.Helper()
	if r.code != 125 || !strings.Contains(r.stderr, git) {
		t.Errorf("%s: want 125 naming %s\n%v", what, git, r)
	}
	if _, err := os.Lstat(filepath.Join(git, "hooks", "post-commit")); err == nil {
		t.Errorf("%s: a hook was planted in %s", what, git)
	}
}

// TestSessionRepoRemadeRefused: a repository guarded at the session's start that the
// user removes and makes again at its path on the host (rm -rf dep; git init dep)
// between requests is a new one, without a read-only .git: refused (F1, repro A). So is
// one the user makes at a path where a command had made (then removed) its own (repro
// B). Without the identity check both are taken as known and the hook is planted.
func TestSessionRepoRemadeRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		dep := filepath.Join(e.ws, "dep")
		e.newRepo(dep, "dep-commit")
		e.start("i")
		if r := e.in("i", nil, plantHook("dep")); r.code == 0 {
			t.Errorf("the start's repository is writable\n%v", r)
		}
		must(t, os.RemoveAll(dep))
		e.newRepo(dep, "dep-again")
		wantGuardRefused(t, e.in("i", nil, plantHook("dep")), filepath.Join(dep, ".git"), "dep made again on the host")

		e.start("j")
		mustSucceed(t, e.in("j", nil, "mkdir -p lib/.git"), "the command's own lib/.git")
		mustSucceed(t, e.in("j", nil, "rm -rf lib"), "removing it")
		lib := filepath.Join(e.ws, "lib")
		e.newRepo(lib, "lib")
		wantGuardRefused(t, e.in("j", nil, plantHook("lib")), filepath.Join(lib, ".git"), "lib made on the host where the command's was")
	})
}

// TestSessionRequestCwdChain: a request whose working directory (the client's) lies in
// a repository deeper than the session's start searched is refused, naming it, as
// one-shot binds the chain down to its working directory read-only (F3); from the
// workspace the session runs on. Without the chain search the hook is planted there.
func TestSessionRequestCwdChain(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		deep := filepath.Join(e.ws, "a", "b", "c", "d", "e")
		e.mkdirOwned(deep)
		e.newRepo(deep, "deep")
		e.start("c")
		ctx := e.limitCtx(runLimit)
		cmd := e.rawCommand(ctx, "exec", "--session", "c", "--", shellPath, "-c", plantHook("."))
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		cmd.Dir = deep
		wantGuardRefused(t, e.runCmd(ctx, cmd), filepath.Join(deep, ".git"), "a request from "+deep)
		mustSucceed(t, e.in("c", nil, "true"), "a request from the workspace after it")
	})
}

// TestSessionMovedRWSearched: a repository the user makes between requests in the
// source of a --rw SRC:DST bind is refused as one in the workspace is (F7). Without
// the search of SRC the hook is planted through DST.
func TestSessionMovedRWSearched(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		src := filepath.Join(e.base, "src")
		e.mkdirOwned(src)
		e.start("w", "--rw", src+":/data")
		mustSucceed(t, e.in("w", nil, "true"), "a first request")
		repo := filepath.Join(src, "repo")
		e.newRepo(repo, "in src")
		wantGuardRefused(t, e.in("w", nil, plantHook("/data/repo")), filepath.Join(repo, ".git"), "a repository made in SRC")
	})
}

// TestSessionMovedBackRefused: a repository made on the host between requests where the
// search does not read (node_modules), then moved into its reach by a command, is not
// taken as that command's (it was born before the search the command followed): the
// next request is refused, naming it, while a repository the same command made is its
// own (F5). Without the birth time check it was adopted and every later request ran.
func TestSessionMovedBackRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.mkdirOwned(filepath.Join(e.ws, "node_modules"))
		e.start("b")
		mustSucceed(t, e.in("b", nil, "true"), "a first request")
		e.mkdirOwned(filepath.Join(e.ws, "node_modules", "a", "b"))
		e.newRepo(filepath.Join(e.ws, "node_modules", "a", "b"), "hidden")
		mustSucceed(t, e.in("b", nil, "mv node_modules/a a && git init -q mine"), "moving it back, and a git init")
		r := e.in("b", nil, "true")
		git := filepath.Join(e.ws, "a", "b", ".git")
		if r.code != 125 || !strings.Contains(r.stderr, git) || strings.Contains(r.stderr, "mine") {
			t.Errorf("the request after: want 125 naming %s (not the command's own mine/.git)\n%v", git, r)
		}
	})
}
