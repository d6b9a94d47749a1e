package integration

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Files an earlier sandbox planted where the launcher reads (issue 15, item 3): every
// file the policy step reads from a writable tree (a .git file, a git dir's commondir,
// gitdir, config and index, a split index's shared index, .gitmodules) and the policy
// file, replaced one at a time by a FIFO, a symlink to /dev/zero, a 1 GiB sparse file, a
// directory and a socket. Each launch ends fast with 125 naming the file, under a 1 GiB
// address-space cap; none hangs, none reads without end, the command never runs.

// plantedLayout makes, in the workspace, a repository "main" with a split index, a
// checked-out submodule "sub" and a linked worktree "wt", and returns the paths of every
// file the policy step reads there.
func (s *sandbox) plantedLayout() []string {
	s.t.Helper()
	mainRepo := filepath.Join(s.ws, "main")
	src := filepath.Join(s.base, "subsrc")
	s.newRepo(src, "sub-commit")
	s.newRepo(mainRepo, "main-commit")
	s.hostGit(mainRepo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
	s.hostGit(mainRepo, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "-m", "sub")
	s.hostGit(mainRepo, "worktree", "add", "-q", "-b", "wtb", filepath.Join(s.ws, "wt"))
	s.hostGit(mainRepo, "update-index", "--split-index")
	shared, _ := filepath.Glob(filepath.Join(mainRepo, ".git", "sharedindex.*"))
	if len(shared) != 1 {
		s.t.Fatalf("no shared index made by git update-index --split-index: %v", shared)
	}
	g := filepath.Join(mainRepo, ".git")
	return []string{
		filepath.Join(g, "config"), filepath.Join(g, "index"), shared[0],
		filepath.Join(mainRepo, ".gitmodules"),
		filepath.Join(mainRepo, "sub", ".git"),
		filepath.Join(g, "modules", "sub", "config"), filepath.Join(g, "modules", "sub", "index"),
		filepath.Join(s.ws, "wt", ".git"),
		filepath.Join(g, "worktrees", "wt", "commondir"), filepath.Join(g, "worktrees", "wt", "gitdir"),
		filepath.Join(g, "worktrees", "wt", "index"),
	}
}

// plant replaces p by a file of kind; undo puts the original back.
func plant(t *testing.T, p, kind string) (undo func()) {
	t.Helper()
	orig := p + ".orig-it"
	must(t, os.Rename(p, orig))
	switch kind {
	case "fifo":
		must(t, syscall.Mkfifo(p, 0o666))
	case "devzero":
		must(t, os.Symlink("/dev/zero", p))
	case "sparse":
		f, err := os.Create(p)
		must(t, err)
		must(t, f.Truncate(1<<30))
		f.Close()
	case "dir":
		must(t, os.Mkdir(p, 0o755))
	case "socket":
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		must(t, err)
		must(t, syscall.Bind(fd, &syscall.SockaddrUnix{Name: p}))
		syscall.Close(fd)
	}
	return func() {
		must(t, os.RemoveAll(p))
		must(t, os.Rename(orig, p))
	}
}

func TestPlantedFilesFailFast(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		files := s.plantedLayout()
		pol := s.writePolicy("p.yaml", "extends: agent\n")
		files = append(files, pol)
		marker := s.marker("planted")
		// the layout itself launches
		if r := s.planted(pol, marker); r.code != 0 {
			t.Fatalf("the unplanted layout does not launch:\n%v", r)
		}
		os.Remove(marker)
		for _, f := range files {
			for _, kind := range []string{"fifo", "devzero", "sparse", "dir", "socket"} {
				if kind == "dir" && filepath.Base(f) == ".git" {
					continue // an empty .git directory is an (empty) repository, guarded as one
				}
				undo := plant(t, f, kind)
				r := s.planted(pol, marker)
				undo()
				what := strings.TrimPrefix(f, s.base+"/") + " as " + kind
				if r.code != 125 || !strings.Contains(r.stderr, f) {
					t.Errorf("%s: want a fast 125 naming the file\n%v", what, r)
				}
				if r.elapsed > 10*time.Second {
					t.Errorf("%s: took %v", what, r.elapsed)
				}
				if _, err := os.Lstat(marker); err == nil {
					t.Errorf("%s: the command ran", what)
					os.Remove(marker)
				}
			}
		}
	})
}

// planted runs `touch marker` under policy pol with a 1 GiB address-space cap and a
// 20 s limit (a hang is reported as such, not waited for).
func (s *sandbox) planted(pol, marker string) result {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := s.command(ctx, "--policy", pol, "--", "touch", marker)
	cmd.Args = append([]string{"prlimit", "--as=1073741824", "--"}, cmd.Args...)
	cmd.Path = "/usr/bin/prlimit"
	cmd.Stdin = strings.NewReader("")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start), code: exitCode(err, cmd.ProcessState)}
	if ctx.Err() != nil {
		r.stderr += "\n(killed after 20 s: the launch hung)"
		r.code = -1
	}
	return r
}

// The policy step stays answerable however long it takes (a -tags gosbxfault build makes
// it never end): SIGINT, SIGTERM and SIGHUP stop the launch with 128+S (gosbx exits, it is
// not killed by the signal), --timeout with 125, the command never runs, and no init is
// left.
func TestPolicyStepInterruptible(t *testing.T) {
	bin := faultBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, 0} {
			marker := s.marker("stall")
			ctx := s.limitCtx(runLimit)
			args := []string{"exec", "--workspace", s.ws}
			if sig == 0 {
				args = append(args, "--timeout", "1s")
			}
			cmd := s.rawCommand(ctx, append(args, "--", "touch", marker)...)
			cmd.Path, cmd.Args = replaceBinary(cmd, bin)
			cmd.Env = s.env("GOSBX_FAULT=policy stall")
			stderr, err := cmd.StderrPipe()
			must(t, err)
			start := time.Now()
			must(t, cmd.Start())
			// the fault build says when its policy step stalls, its signals caught
			var errb strings.Builder
			line := make([]byte, 256)
			n, _ := stderr.Read(line)
			errb.Write(line[:n])
			if !strings.Contains(errb.String(), "stalls") {
				t.Fatalf("the policy step did not stall: %q", errb.String())
			}
			if sig != 0 {
				cmd.Process.Signal(sig)
			}
			rest, _ := io.ReadAll(stderr)
			errb.Write(rest)
			err = cmd.Wait()
			took := time.Since(start)
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			want := 125
			if sig != 0 {
				want = 128 + int(sig)
			}
			if ws.Signaled() || cmd.ProcessState.ExitCode() != want {
				t.Errorf("signal %v: want exit %d, got %v (%v)\n%s", sig, want, cmd.ProcessState, err, errb.String())
			}
			if took > 10*time.Second {
				t.Errorf("signal %v: took %v", sig, took)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Errorf("signal %v: the command ran", sig)
			}
			if pids := faultInits("policy stall"); len(pids) > 0 {
				t.Errorf("signal %v: init processes left: %v", sig, pids)
			}
		}
	})
}
