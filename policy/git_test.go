package policy

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/nsinit/config"
)

// gitCmd runs git in dir with a private configuration.
func gitCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on this host")
	}
	home := t.TempDir()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
		"-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %q in %s: %v\n%s", args, dir, err, out)
	}
}

// newRepo makes a repository with one commit at dir.
func newRepo(t *testing.T, dir string) {
	t.Helper()
	mkdirs(t, dir)
	gitCmd(t, dir, "init", "-q")
	touch(t, filepath.Join(dir, "README"))
	gitCmd(t, dir, "add", "README")
	gitCmd(t, dir, "commit", "-q", "-m", "init")
}

// fakeGitDir makes a minimal git dir (HEAD, objects, config, hooks) at d.
func fakeGitDir(t *testing.T, d string) {
	t.Helper()
	mkdirs(t, filepath.Join(d, "objects"), filepath.Join(d, "refs"), filepath.Join(d, "hooks"))
	touch(t, filepath.Join(d, "HEAD"), filepath.Join(d, "config"))
}

func gitPolicy(t *testing.T, mode string) *Policy {
	t.Helper()
	return mustParse(t, "extends: agent\nfilesystem:\n  git: "+mode+"\n")
}

func compileGit(t *testing.T, mode, ws string) *config.Config {
	t.Helper()
	return mustCompile(t, Options{Policy: gitPolicy(t, mode), Workspace: ws}, fakeHost(ws))
}

func checkPaths(t *testing.T, what string, got []string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s lack %s\n(have %q)", what, w, got)
		}
	}
	for _, n := range notWant {
		if slices.Contains(got, n) {
			t.Errorf("%s list %s", what, n)
		}
	}
}

func TestGitReadOnly(t *testing.T) {
	ws := canonTempDir(t)
	newRepo(t, ws)
	g := filepath.Join(ws, ".git")
	for _, mode := range []string{"", GitReadOnly} {
		s := mustCompile(t, Options{Policy: mustParse(t, "extends: agent\nfilesystem:\n  git: "+mode+"\n"), Workspace: ws}, fakeHost(ws))
		checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths, []string{g}, []string{filepath.Join(g, "hooks"), filepath.Join(g, "objects")})
	}
}

func TestGitCommit(t *testing.T) {
	ws := canonTempDir(t)
	newRepo(t, ws)
	g := filepath.Join(ws, ".git")
	s := compileGit(t, GitCommit, ws)
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths,
		[]string{filepath.Join(g, "hooks"), filepath.Join(g, "config"), filepath.Join(g, "info"), filepath.Join(g, "objects", "info")},
		[]string{g, filepath.Join(g, "objects"), filepath.Join(g, "refs"), filepath.Join(g, "index"), filepath.Join(g, "logs"), filepath.Join(g, "HEAD")})

	// The guarded directories, when missing, are named for the launch to create (so
	// the command cannot make them); compiling creates nothing.
	for _, d := range []string{"hooks", "info", filepath.Join("objects", "info")} {
		if err := os.RemoveAll(filepath.Join(g, d)); err != nil {
			t.Fatal(err)
		}
	}
	s = compileGit(t, GitCommit, ws)
	made := s.MakeDirs
	for _, d := range []string{"hooks", "info", filepath.Join("objects", "info")} {
		p := filepath.Join(g, d)
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("compiling created %s", p)
		}
		if !slices.Contains(made, p) {
			t.Errorf("MakeDirs %q lacks %s", made, p)
		}
		if !slices.Contains(s.Linux.ReadonlyPaths, p) {
			t.Errorf("ReadonlyPaths lack the created %s", p)
		}
	}
	// A missing commondir or alternates is not invented.
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths, nil, []string{filepath.Join(g, "commondir")})
}

func TestGitCommitSubmodules(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	lib := filepath.Join(base, "lib")
	newRepo(t, lib)
	newRepo(t, ws)
	gitCmd(t, ws, "submodule", "add", "-q", lib, "vendor/lib")
	g := filepath.Join(ws, ".git")
	mod := filepath.Join(g, "modules", "vendor", "lib") // a name with a slash
	if !isGitDir(mod) {
		t.Fatalf("git did not put the submodule's git dir at %s", mod)
	}
	// A second, hand-made module with a plain name.
	plain := filepath.Join(g, "modules", "plain")
	fakeGitDir(t, plain)

	s := compileGit(t, GitCommit, ws)
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths,
		[]string{
			filepath.Join(g, "hooks"), filepath.Join(g, "config"),
			filepath.Join(mod, "hooks"), filepath.Join(mod, "config"), filepath.Join(mod, "info"),
			filepath.Join(plain, "hooks"), filepath.Join(plain, "config"),
			filepath.Join(ws, "vendor", "lib", ".git"), // the submodule's .git file
		},
		[]string{g, mod, filepath.Join(mod, "objects"), filepath.Join(mod, "refs"), filepath.Join(plain, "objects")})
	// Inside the workspace, the git dirs get no bind of their own: only the directories
	// that hold a guarded path are pinned (bound onto themselves, read-write).
	for _, m := range s.Mounts {
		if !strings.HasPrefix(m.Destination, g) {
			continue
		}
		holds := slices.ContainsFunc(s.Linux.ReadonlyPaths, func(p string) bool { return strings.HasPrefix(p, m.Destination+"/") })
		if m.Source != m.Destination || slices.Contains(m.Options, "ro") || !holds {
			t.Errorf("unexpected mount in the workspace's git dir: %+v", m)
		}
	}

	s = compileGit(t, GitReadOnly, ws)
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths, []string{g, filepath.Join(ws, "vendor", "lib", ".git")}, nil)
}

func TestGitLinkedWorktree(t *testing.T) {
	base := canonTempDir(t)
	repo := filepath.Join(base, "repo")
	wt := filepath.Join(base, "wt")
	newRepo(t, repo)
	gitCmd(t, repo, "worktree", "add", "-q", wt)
	common := filepath.Join(repo, ".git")
	gd := filepath.Join(common, "worktrees", "wt")
	dotgit := filepath.Join(wt, ".git")
	if st, err := os.Lstat(dotgit); err != nil || st.IsDir() {
		t.Fatalf("%s is not a .git file: %v", dotgit, err)
	}

	t.Run("readonly", func(t *testing.T) {
		s := compileGit(t, GitReadOnly, wt)
		checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths, []string{dotgit}, nil)
		_, m := findMount(s, common)
		if m == nil || m.Source != common || !slices.Contains(m.Options, "ro") {
			t.Errorf("the common git dir %s is not bound read-only: %+v", common, m)
		}
		for _, m := range s.Mounts {
			if strings.HasPrefix(m.Destination, common) && !slices.Contains(m.Options, "ro") {
				t.Errorf("writable mount in the git dir: %+v", m)
			}
			if m.Destination == repo {
				t.Errorf("the main worktree is bound: %+v", m)
			}
		}
	})
	t.Run("commit", func(t *testing.T) {
		s := compileGit(t, GitCommit, wt)
		_, m := findMount(s, common)
		if m == nil || m.Source != common || slices.Contains(m.Options, "ro") {
			t.Errorf("the common git dir %s is not bound read-write: %+v", common, m)
		}
		checkParentsFirst(t, s)
		checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths,
			[]string{
				dotgit,
				filepath.Join(common, "hooks"), filepath.Join(common, "config"), filepath.Join(common, "info"),
				filepath.Join(common, "objects", "info"),
				filepath.Join(gd, "commondir"), filepath.Join(gd, "gitdir"),
				// the main checkout's, which the sandbox cannot write
				filepath.Join(common, "HEAD"), filepath.Join(common, "index"), filepath.Join(common, "logs", "HEAD"),
			},
			[]string{common, gd, filepath.Join(common, "objects"), filepath.Join(common, "refs"), filepath.Join(gd, "index"), filepath.Join(gd, "HEAD")})
		if slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(repo)) {
			t.Error("the main worktree is listed")
		}
	})
	t.Run("workspace through a symlink", func(t *testing.T) {
		link := filepath.Join(base, "wtlink")
		if err := os.Symlink(wt, link); err != nil {
			t.Fatal(err)
		}
		s := mustCompile(t, Options{Policy: gitPolicy(t, GitReadOnly), Workspace: link}, fakeHost(base))
		if _, m := findMount(s, common); m == nil {
			t.Errorf("the common git dir is not bound when the worktree is named through a symlink")
		}
	})
}

// TestGitNestedWorktrees: what the scan finds below the workspace never narrows the
// workspace's own repository in commit mode (the trial's .worktrees/agent1 layout: the
// main checkout's HEAD, index and HEAD's log stay writable), and each nested checkout
// keeps its own rules: a linked worktree of the workspace's repository or of another
// one commits as a workspace does (its commondir and gitdir read-only), another
// repository's main checkout outside stays read-only, as does the git dir of a sibling
// worktree outside the sandbox.
func TestGitNestedWorktrees(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	other := filepath.Join(base, "other")
	newRepo(t, ws)
	newRepo(t, other)
	gitCmd(t, ws, "worktree", "add", "-q", ".worktrees/a1")
	gitCmd(t, ws, "worktree", "add", "-q", ".worktrees/a2")
	gitCmd(t, ws, "worktree", "add", "-q", filepath.Join(base, "side"))
	gitCmd(t, other, "worktree", "add", "-q", filepath.Join(ws, "otherwt"))
	common, ocommon := filepath.Join(ws, ".git"), filepath.Join(other, ".git")
	wt := func(c, n string) string { return filepath.Join(c, "worktrees", n) }

	s := compileGit(t, GitCommit, ws)
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths,
		[]string{
			filepath.Join(ws, ".worktrees", "a1", ".git"), filepath.Join(ws, "otherwt", ".git"),
			filepath.Join(common, "hooks"), filepath.Join(common, "config"),
			filepath.Join(wt(common, "a1"), "commondir"), filepath.Join(wt(common, "a1"), "gitdir"),
			filepath.Join(wt(common, "a2"), "commondir"), filepath.Join(wt(common, "a2"), "gitdir"),
			wt(common, "side"),
			// the nested worktrees' own submodule git dirs (none: made, read-only)
			filepath.Join(wt(common, "a1"), "modules"), filepath.Join(wt(common, "a2"), "modules"),
		},
		[]string{
			common, filepath.Join(common, "HEAD"), filepath.Join(common, "index"), filepath.Join(common, "logs", "HEAD"),
			wt(common, "a1"), wt(common, "a2"), filepath.Join(wt(common, "a1"), "HEAD"), filepath.Join(wt(common, "a2"), "index"),
			ocommon, wt(ocommon, "otherwt"), filepath.Join(wt(ocommon, "otherwt"), "HEAD"),
		})
	// Another repository's git dir, named only by a .git file found below the workspace
	// (review 25 F3: a stale worktree record the command can revive), is bound
	// read-only; with a --rw of that repository it is guarded as the workspace's is.
	if _, m := findMount(s, ocommon); m == nil || m.Source != ocommon || !slices.Contains(m.Options, "ro") {
		t.Errorf("the other repository's git dir %s is not bound read-only: %+v", ocommon, m)
	}
	s = mustCompile(t, Options{Policy: gitPolicy(t, GitCommit), Workspace: ws, ReadWrite: []string{other}}, fakeHost(ws))
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths,
		[]string{
			filepath.Join(ocommon, "hooks"), filepath.Join(ocommon, "config"),
			filepath.Join(wt(ocommon, "otherwt"), "commondir"), filepath.Join(wt(ocommon, "otherwt"), "modules"),
		},
		[]string{ocommon, wt(ocommon, "otherwt"), filepath.Join(wt(ocommon, "otherwt"), "HEAD")})

	// A worktree git dir whose gitdir names a .git file that does not name it back (a
	// planted or moved one) is another checkout's: read-only whole.
	if err := os.WriteFile(filepath.Join(ws, ".worktrees", "a2", ".git"), []byte("gitdir: "+wt(common, "a1")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s = compileGit(t, GitCommit, ws)
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths, []string{wt(common, "a2")}, []string{wt(common, "a1"), filepath.Join(common, "HEAD")})

	s = compileGit(t, GitReadOnly, ws)
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths, []string{common}, nil)
}

// TestGitNestedWorktreeOfSubmodule: a linked worktree of a submodule, both checked out
// in the workspace, leaves the submodule's HEAD and index writable in commit mode (its
// checkout, found through core.worktree and its .git file, is the sandbox's); with the
// submodule's core.worktree naming a directory whose .git does not name its git dir
// back, they are read-only.
func TestGitNestedWorktreeOfSubmodule(t *testing.T) {
	base := canonTempDir(t)
	ws, src := filepath.Join(base, "ws"), filepath.Join(base, "src")
	newRepo(t, ws)
	newRepo(t, src)
	gitCmd(t, ws, "submodule", "add", "-q", src, "sub")
	gitCmd(t, filepath.Join(ws, "sub"), "worktree", "add", "-q", "../subwt")
	mod := filepath.Join(ws, ".git", "modules", "sub")
	wt := filepath.Join(mod, "worktrees", "subwt")
	s := compileGit(t, GitCommit, ws)
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths,
		[]string{filepath.Join(mod, "config"), filepath.Join(mod, "hooks"), filepath.Join(wt, "commondir"), filepath.Join(wt, "gitdir")},
		[]string{mod, filepath.Join(mod, "HEAD"), filepath.Join(mod, "index"), wt, filepath.Join(wt, "HEAD")})

	// the submodule's checkout moved aside (its .git file gone): not the sandbox's
	if err := os.Rename(filepath.Join(ws, "sub", ".git"), filepath.Join(ws, "sub", "dotgit")); err != nil {
		t.Fatal(err)
	}
	s = compileGit(t, GitCommit, ws)
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths, []string{filepath.Join(mod, "HEAD"), filepath.Join(mod, "index")}, []string{wt})
}

// TestGitPlantedDotGitFile: a .git file the command (or anyone) planted, pointing at a
// repository that does not point back, does not bring that repository in.
func TestGitPlantedDotGitFile(t *testing.T) {
	base := canonTempDir(t)
	other := filepath.Join(base, "other")
	newRepo(t, other)
	repo := filepath.Join(base, "repo")
	realWt := filepath.Join(base, "realwt")
	newRepo(t, repo)
	gitCmd(t, repo, "worktree", "add", "-q", realWt)

	tests := []struct {
		name, gitdir string
		outside      string // must not be bound or listed
	}{
		{"another repository", filepath.Join(other, ".git"), other},
		{"another repository, relative", "../other/.git", other},
		{"another worktree's git dir", filepath.Join(repo, ".git", "worktrees", "realwt"), repo},
		{"not a git dir", "/etc", "/etc/"},
		{"missing", filepath.Join(base, "nope"), filepath.Join(base, "nope")},
	}
	for _, tt := range tests {
		for _, mode := range []string{GitReadOnly, GitCommit} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				ws := filepath.Join(base, "ws-"+strings.ReplaceAll(tt.name, " ", "-")+"-"+mode)
				touch(t, filepath.Join(ws, "f"))
				if err := os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: "+tt.gitdir+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				s := compileGit(t, mode, ws)
				if !slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(ws, ".git")) {
					t.Errorf("the planted .git file itself is not read-only")
				}
				for _, m := range s.Mounts {
					if m.Source == tt.outside || strings.HasPrefix(m.Source, tt.outside+"/") || strings.HasPrefix(m.Source, tt.outside) && strings.HasSuffix(tt.outside, "/") {
						t.Errorf("the planted .git brought in %+v", m)
					}
				}
				for _, p := range s.Linux.ReadonlyPaths {
					if strings.HasPrefix(p, strings.TrimSuffix(tt.outside, "/")+"/") {
						t.Errorf("ReadonlyPaths list %s", p)
					}
				}
			})
		}
	}
	// No guarded directory was created in the other repositories.
	for _, d := range []string{filepath.Join(other, ".git", "hooks"), filepath.Join(repo, ".git", "hooks")} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	ws := filepath.Join(base, "ws-last")
	touch(t, filepath.Join(ws, "f"))
	if err := os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: "+filepath.Join(other, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	compileGit(t, GitCommit, ws)
	if _, err := os.Stat(filepath.Join(other, ".git", "hooks")); err == nil {
		t.Error("compiling created hooks/ in a repository outside the sandbox")
	}
}

func TestGuardGitPlan(t *testing.T) {
	base := canonTempDir(t)
	gd := filepath.Join(base, ".git")
	fakeGitDir(t, gd)
	touch(t, filepath.Join(gd, "objects", "info", "alternates"))
	inside := func(p string) bool { return strings.HasPrefix(p, base+"/") }

	plan, _ := guardGit(gd, GitCommit, inside, nil, nil)
	wantRO := []string{filepath.Join(gd, "hooks"), filepath.Join(gd, "config"), filepath.Join(gd, "info"), filepath.Join(gd, "objects", "info"), filepath.Join(gd, "refs", "replace")}
	checkPaths(t, "readOnly", plan.readOnly, wantRO, []string{gd, filepath.Join(gd, "objects")})
	// refs/replace and info/ are missing, and so is modules/ (no submodule git dir yet: none may be made)
	if !slices.Equal(plan.makeDirs, []string{filepath.Join(gd, "refs", "replace"), filepath.Join(gd, "info"), filepath.Join(gd, "modules")}) {
		t.Errorf("makeDirs = %q; want refs/replace, info/ and modules/", plan.makeDirs)
	}
	if len(plan.bindRO)+len(plan.bindRW) != 0 {
		t.Errorf("binds for a git dir inside the tree: %+v", plan)
	}
	plan, _ = guardGit(gd, GitReadOnly, inside, nil, nil)
	if !slices.Equal(plan.readOnly, []string{gd}) || len(plan.makeDirs) != 0 {
		t.Errorf("readonly plan = %+v", plan)
	}
	if plan, _ := guardGit(filepath.Join(base, "missing"), GitCommit, inside, nil, nil); len(plan.readOnly) != 0 {
		t.Errorf("plan for a missing entry: %+v", plan)
	}
	// A .git file with garbage: only the file itself.
	f := filepath.Join(base, "w", ".git")
	touch(t, f)
	if err := os.WriteFile(f, []byte("not a gitdir line"), 0o644); err != nil {
		t.Fatal(err)
	}
	if plan, _ := guardGit(f, GitCommit, inside, nil, nil); !slices.Equal(plan.readOnly, []string{f}) || len(plan.bindRW) != 0 {
		t.Errorf("plan for a garbage .git file: %+v", plan)
	}
}

func TestGitCommitAbsentAfter(t *testing.T) {
	ws := canonTempDir(t)
	newRepo(t, ws)
	s := compileGit(t, GitCommit, ws)
	entries := s.Cleanup
	if len(entries) == 0 {
		t.Fatal("no cleanup in commit mode")
	}
	want := cleanup.Entry{Kind: cleanup.RemoveIfCreated, Path: filepath.Join(ws, ".git", "commondir")}
	if !slices.ContainsFunc(entries, func(e cleanup.Entry) bool { return e.Kind == want.Kind && e.Path == want.Path }) {
		t.Errorf("cleanup %+v; want the git dir's commondir removed if created", entries)
	}
	if s := compileGit(t, GitReadOnly, ws); len(s.Cleanup) > 0 {
		t.Errorf("readonly mode: cleanup %+v", s.Cleanup)
	}
}

// gitlinks reads git's own index, versions 2, 3 (an intent-to-add entry sets the
// extended flags) and 4 (prefix-compressed names).
func TestGitlinksFromIndex(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, ver := range []string{"2", "3", "4", "split"} {
		t.Run("v"+ver, func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) {
				t.Helper()
				cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
				cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			git("init", "-q")
			// "sha256" in the config, but not as the object format
			git("remote", "add", "origin", "https://example.com/sha256-simd.git")
			os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
			git("add", "a.txt")
			git("commit", "-q", "-m", "a")
			sha := "0123456789abcdef0123456789abcdef01234567"
			for _, p := range []string{"vendor/lib", "vendor/lib2", "z/deep/sub"} {
				git("update-index", "--add", "--cacheinfo", "160000,"+sha+","+p)
			}
			os.WriteFile(filepath.Join(dir, "later.txt"), []byte("b"), 0o644)
			if ver == "3" {
				git("add", "-N", "later.txt") // intent-to-add: extended flags, version 3
			} else {
				git("add", "later.txt")
			}
			if ver == "split" {
				git("update-index", "--split-index") // the entries move to .git/sharedindex.*
				git("update-index", "--add", "--cacheinfo", "100644,"+"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"+",x.txt")
			} else {
				git("update-index", "--index-version", ver)
			}
			got, err := gitlinks(filepath.Join(dir, ".git"))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"vendor/lib", "vendor/lib2", "z/deep/sub"}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("index v%s: gitlinks %q, want %q", ver, got, want)
			}
		})
	}
}

// .gitmodules paths as git reads the key: any case, after a header, with comments.
func TestGitmodulesPaths(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".gitmodules"), []byte(`[submodule "a"]
	path = a
[submodule "b"]
	Path = b ; a comment
[submodule "c"] path = c
[submodule "d"]
	path = "d d"
[submodule "e"]
	PATH=e#x
[submodule "a]b"] path = p1
[submodule "q"]
	path = p"2"
	path = "p3"x
`), 0o644)
	got, err := gitmodulesPaths(dir, nil)
	if err != nil || strings.Join(got, ",") != "a,b,c,d d,e,p1,p2,p3x" {
		t.Errorf("paths %q (%v)", got, err)
	}
}

// A .gitmodules or index the command replaced by a FIFO, a symlink to /dev/zero or a
// huge file is refused, not read without end.
func TestReadRegularRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", link)
	for _, p := range []string{fifo, link} {
		if _, err := readRegular(p, 1<<20); err == nil {
			t.Errorf("%s was read", p)
		}
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, 2048), 0o644)
	if _, err := readRegular(big, 1024); err == nil {
		t.Error("a file over the limit was read")
	}
	if _, err := readRegular(filepath.Join(dir, "none"), 10); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v", err)
	}
}

// An index whose entry names are read by their flags' length, as git does: a name with
// a NUL inside its length cannot hide the entries after it.
func TestGitlinksNameLengthFromFlags(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	entry := func(mode uint32, name string) {
		start := b.Len()
		b.Write(make([]byte, 24))
		binary.Write(&b, binary.BigEndian, mode)
		b.Write(make([]byte, 12+20))
		binary.Write(&b, binary.BigEndian, uint16(len(name)))
		b.WriteString(name)
		for pad := 8 - (b.Len()-start)%8; pad > 0; pad-- {
			b.WriteByte(0)
		}
	}
	b.WriteString("DIRC")
	binary.Write(&b, binary.BigEndian, uint32(2))
	binary.Write(&b, binary.BigEndian, uint32(2))
	entry(0o100644, "a.txt\x00zz\x00\x00\x00\x00\x00\x00\x00\x00")
	entry(0o160000, "hidden/sub")
	b.Write(make([]byte, 20))
	os.WriteFile(filepath.Join(dir, "index"), b.Bytes(), 0o644)
	got, err := gitlinks(dir)
	if err != nil || strings.Join(got, ",") != "hidden/sub" {
		t.Errorf("gitlinks %q (%v), want hidden/sub", got, err)
	}
	// a truncated index is an error, not a shorter list
	os.WriteFile(filepath.Join(dir, "index"), b.Bytes()[:b.Len()-40], 0o644)
	if _, err := gitlinks(dir); err == nil {
		t.Error("a truncated index was accepted")
	}
}

// Commit mode in a workspace whose path is not valid UTF-8: the config carries the
// paths to remove after the run byte for byte (the launcher sends it in a binary
// encoding), but their OCI JSON export is refused: JSON would change them (U+FFFD), and
// a launch from the exported file would clean up elsewhere.
func TestGitCommitNonUTF8Workspace(t *testing.T) {
	ws := filepath.Join(canonTempDir(t), "ws-\xff")
	newRepo(t, ws)
	s, err := Compile(Options{Policy: gitPolicy(t, GitCommit), Workspace: ws, Args: []string{"true"}}, fakeHost(ws))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(ws, ".git", "commondir")
	back, err := config.Decode(config.Encode(s))
	if err != nil || !slices.ContainsFunc(back.Cleanup, func(e cleanup.Entry) bool { return e.Path == want }) {
		t.Errorf("the init would clean up %+v (%v); want %q among them", back.Cleanup, err, want)
	}
	if _, err := config.ToSpec(s); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("ToSpec = %v; want a refusal naming invalid UTF-8", err)
	}
	ro, err := Compile(Options{Policy: gitPolicy(t, GitReadOnly), Workspace: ws, Args: []string{"true"}}, fakeHost(ws))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.ToSpec(ro); err != nil {
		t.Errorf("read-only git mode needs no cleanup list: %v", err)
	}
}

// A git dir a command filled with more names than the guard reads from one directory
// is refused (125), not held in memory whole.
func TestGitDirHugeDirectoryRefused(t *testing.T) {
	ws := canonTempDir(t)
	newRepo(t, ws)
	tags := filepath.Join(ws, ".git", "refs", "tags")
	for i := 0; i <= maxDirEntries; i++ {
		fd, err := unix.Open(filepath.Join(tags, "t"+strconv.Itoa(i)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
	}
	_, err := Compile(Options{Policy: gitPolicy(t, GitCommit), Workspace: ws, Args: []string{"true"}}, fakeHost(ws))
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("a git dir with %d names in refs/tags: %v", maxDirEntries+1, err)
	}
}

// In commit mode no directory of a git dir's modules/ tree takes a new entry: an empty
// one (modules/ itself, or a directory between it and a submodule git dir whose name has
// slashes) is read-only, and every one is cleaned of new entries after the run, whether
// it was missing, empty or full at launch (from an attack review: an empty modules/ left
// by an earlier launch got neither).
func TestGitCommitModulesTreeNoNewEntries(t *testing.T) {
	hasNoNew := func(s *config.Config, dir string, keep []string) bool {
		return slices.ContainsFunc(s.Cleanup, func(e cleanup.Entry) bool {
			return e.Kind == cleanup.RemoveNewEntries && e.Path == dir && slices.Equal(e.Keep, keep)
		})
	}
	t.Run("missing", func(t *testing.T) {
		ws := canonTempDir(t)
		newRepo(t, ws)
		m := filepath.Join(ws, ".git", "modules")
		os.RemoveAll(m)
		s := compileGit(t, GitCommit, ws)
		if !slices.Contains(s.Linux.ReadonlyPaths, m) || !slices.Contains(s.MakeDirs, m) || !hasNoNew(s, m, []string{}) {
			t.Errorf("a missing modules/ is not made, read-only and cleaned: ro %q make %q cleanup %+v", s.Linux.ReadonlyPaths, s.MakeDirs, s.Cleanup)
		}
	})
	t.Run("empty", func(t *testing.T) {
		ws := canonTempDir(t)
		newRepo(t, ws)
		m := filepath.Join(ws, ".git", "modules")
		mkdirAll(t, m, 0o755)
		s := compileGit(t, GitCommit, ws)
		if !slices.Contains(s.Linux.ReadonlyPaths, m) || !hasNoNew(s, m, []string{}) {
			t.Errorf("an empty modules/ is not read-only and cleaned: ro %q cleanup %+v", s.Linux.ReadonlyPaths, s.Cleanup)
		}
	})
	t.Run("nested", func(t *testing.T) {
		ws := canonTempDir(t)
		newRepo(t, ws)
		m := filepath.Join(ws, ".git", "modules")
		fakeGitDir(t, filepath.Join(m, "vendor", "lib"))
		mkdirAll(t, filepath.Join(m, "vendor", "empty"), 0o755)
		mkdirAll(t, filepath.Join(m, "a", "b", "c", "d", "e"), 0o755)
		s := compileGit(t, GitCommit, ws)
		for _, w := range []struct {
			dir  string
			keep []string
		}{{m, []string{"a", "vendor"}}, {filepath.Join(m, "vendor"), []string{"empty", "lib"}}, {filepath.Join(m, "vendor", "empty"), []string{}},
			{filepath.Join(m, "a", "b"), []string{"c"}}} {
			if !hasNoNew(s, w.dir, w.keep) {
				t.Errorf("%s is not cleaned of new entries (keep %q): %+v", w.dir, w.keep, s.Cleanup)
			}
		}
		for _, ro := range []string{filepath.Join(m, "vendor", "empty"), filepath.Join(m, "a", "b", "c", "d")} {
			if !slices.Contains(s.Linux.ReadonlyPaths, ro) {
				t.Errorf("%s is not read-only: %q", ro, s.Linux.ReadonlyPaths)
			}
		}
		if slices.Contains(s.Linux.ReadonlyPaths, m) || slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(m, "vendor")) {
			t.Errorf("a modules/ directory with a submodule git dir is read-only whole: %q", s.Linux.ReadonlyPaths)
		}
	})
}

func mkdirAll(t *testing.T, d string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(d, perm); err != nil {
		t.Fatal(err)
	}
}

// Commit mode guards replace refs (attack review 27 F8): refs/replace read-only, what
// is there kept by identity, packed-refs' replace lines kept as they are; a repository
// whose refs are in a reftable is refused.
func TestGuardReplaceRefs(t *testing.T) {
	base := canonTempDir(t)
	gd := filepath.Join(base, ".git")
	fakeGitDir(t, gd)
	if err := os.MkdirAll(filepath.Join(gd, "refs", "replace"), 0o755); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(gd, "refs", "replace", "aaaa"))
	if err := os.WriteFile(filepath.Join(gd, "packed-refs"), []byte("1 refs/heads/main\n2 refs/replace/bbbb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inside := func(p string) bool { return strings.HasPrefix(p, base+"/") }
	plan, err := guardGit(gd, GitCommit, inside, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rr := filepath.Join(gd, "refs", "replace")
	if !slices.Contains(plan.readOnly, rr) {
		t.Errorf("refs/replace is not read-only: %q", plan.readOnly)
	}
	var entries, packed int
	for _, e := range plan.cleanups {
		switch {
		case e.Kind == cleanup.RemoveNewEntries && e.Path == rr && slices.Equal(e.Keep, []string{"aaaa"}) && len(e.KeepIDs) == 1:
			entries++
		case e.Kind == cleanup.RemovePackedRefs && e.Prefix == "refs/replace/" && slices.Equal(e.Keep, []string{"2 refs/replace/bbbb"}):
			packed++
		}
	}
	if entries != 1 || packed != 1 {
		t.Errorf("cleanups %+v: want refs/replace's entries kept and packed-refs' replace line kept", plan.cleanups)
	}
	if err := os.Mkdir(filepath.Join(gd, "reftable"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := guardGit(gd, GitCommit, inside, nil, nil); err == nil || !strings.Contains(err.Error(), "reftable") {
		t.Errorf("a reftable repository: %v, want refused naming it", err)
	}
}
