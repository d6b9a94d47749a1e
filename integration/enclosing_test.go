package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A workspace inside a repository (issue 15, item 2): "mono" has a deinitialised
// submodule at svc/vendor/lib; with the workspace mono/svc, the command makes a
// repository at vendor/lib with core.fsmonitor set to a script of its own. The host's
// git status in mono (which recurses into a populated submodule path) must run nothing
// of it: the enclosing repository's submodule paths inside the writable tree are guarded
// like those of a repository below it.
func TestEnclosingRepoSubmoduleGuarded(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, how := range []string{"workspace", "rw", "missing"} {
			t.Run(how, func(t *testing.T) {
				s := newSandbox(t, c)
				mono := filepath.Join(s.ws, "mono")
				src := filepath.Join(s.base, "libsrc")
				s.newRepo(src, "lib")
				s.newRepo(mono, "mono")
				must(t, os.MkdirAll(filepath.Join(mono, "svc"), 0o755))
				s.chown(filepath.Join(mono, "svc"))
				s.hostGit(mono, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "svc/vendor/lib")
				s.hostGit(mono, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "-m", "lib")
				s.hostGit(mono, "submodule", "deinit", "-q", "-f", "svc/vendor/lib")
				if how == "missing" {
					// not even its parent directory is there
					must(t, os.RemoveAll(filepath.Join(mono, "svc", "vendor")))
				}
				marker := filepath.Join(s.ws, "FSMONITOR-RAN") // the caller can write there
				svc := filepath.Join(mono, "svc")
				script := `cd "$1" || exit 3
printf '#!/bin/sh\ntouch %s\nexit 1\n' "$2" > hook.sh && chmod +x hook.sh
mkdir -p vendor/lib 2>/dev/null; git init -q vendor/lib 2>/dev/null && git -C vendor/lib config core.fsmonitor "$1/hook.sh" && echo PLANTED
mkdir -p vendor/other && git init -q vendor/other 2>/dev/null && echo OTHER
exit 0`
				var r result
				if how != "rw" {
					ctx := s.limitCtx(runLimit)
					cmd := s.rawCommand(ctx, "exec", "--workspace", svc, "--", shellPath, "-c", script, "_", svc, marker)
					r = s.runCmd(ctx, cmd)
				} else {
					// the workspace elsewhere, mono/svc a read-write bind
					other := filepath.Join(s.base, "elsewhere")
					must(t, os.Mkdir(other, 0o755))
					s.chown(other)
					ctx := s.limitCtx(runLimit)
					cmd := s.rawCommand(ctx, "exec", "--workspace", other, "--rw", svc, "--", shellPath, "-c", script, "_", svc, marker)
					r = s.runCmd(ctx, cmd)
				}
				mustSucceed(t, r, "the command")
				if strings.Contains(r.stdout, "PLANTED") {
					t.Errorf("the command made a repository at the enclosing repository's submodule path:\n%v", r)
				}
				if !strings.Contains(r.stdout, "OTHER") {
					t.Errorf("the rest of the tree was not writable:\n%v", r)
				}
				out, _ := s.hostGitOut(mono, "status")
				if _, err := os.Stat(marker); err == nil {
					t.Errorf("the host's git status in the enclosing repository ran the command's fsmonitor\n%s", out)
				}
			})
		}
	})
}

// A linked worktree of the enclosing repository lying in the workspace deeper than the
// scan for protected paths reaches: its .git file stays read-only, so the command cannot
// point it at a git dir of its own making, whose config the host's git would run there.
func TestEnclosingRepoWorktreeGuarded(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		mono := filepath.Join(s.ws, "mono")
		s.newRepo(mono, "mono")
		svc := filepath.Join(mono, "svc")
		must(t, os.MkdirAll(svc, 0o755))
		s.chown(svc)
		wt := filepath.Join(svc, "a", "b", "c", "d", "wt")
		s.hostGit(mono, "worktree", "add", "-q", "-b", "deep", wt)
		for d := filepath.Dir(wt); d != svc; d = filepath.Dir(d) {
			s.chown(d)
		}
		marker := filepath.Join(s.ws, "FSMONITOR-RAN")
		ctx := s.limitCtx(runLimit)
		cmd := s.rawCommand(ctx, "exec", "--workspace", svc, "--", shellPath, "-c", `cd "$1" || exit 3
printf '#!/bin/sh\ntouch %s\nexit 1\n' "$2" > hook.sh && chmod +x hook.sh
git init -q --bare evil.git && git --git-dir=evil.git config core.fsmonitor "$1/hook.sh" && git --git-dir=evil.git config core.bare false
(printf 'gitdir: %s/evil.git\n' "$1" > a/b/c/d/wt/.git) 2>/dev/null && echo REPOINTED
exit 0`, "_", svc, marker)
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "the command")
		if strings.Contains(r.stdout, "REPOINTED") {
			t.Errorf("the command rewrote the enclosing repository's worktree .git file:\n%v", r)
		}
		out, _ := s.hostGitOut(wt, "status")
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the host's git status in the worktree ran the command's fsmonitor\n%s", out)
		}
	})
}
