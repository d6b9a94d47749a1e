package policy

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// memoFSOutcome is what one launch's policy step decides: the config (as JSON), the
// notes, or the error.
type memoFSOutcome struct {
	spec, notes, err string
}

// memoFSRun runs Effective and BuildNoted with the per-launch lstat/readlink memory
// on or off (memoFS).
func memoFSRun(t *testing.T, memo bool, o Options, h Host) memoFSOutcome {
	t.Helper()
	old := memoFS
	memoFS = memo
	defer func() { memoFS = old }()
	var out memoFSOutcome
	eff, err := Effective(o, h)
	if err == nil {
		var notes []string
		c, n, berr := BuildNoted(eff, o.Args, h)
		notes, err = n, berr
		if err == nil {
			for i := range c.Cleanup {
				c.Cleanup[i].Since = 0 // when the launch began: differs between any two runs
			}
			b, merr := json.Marshal(c)
			if merr != nil {
				t.Fatal(merr)
			}
			out.spec = string(b)
		}
		out.notes = strings.Join(notes, "\n")
	}
	if err != nil {
		out.err = err.Error()
	}
	return out
}

// memoFSLayout builds one generated host layout under base from rng: a home with git
// config files (includes, programs named by core.pager, core.editor, core.sshCommand,
// gpg.program, credential.helper), PATH directories inside and outside the workspace
// (plain, through symlinks, dangling, unsearchable), what they hold under the names
// those settings run (programs, plain files, directories, symlinks to programs, chains,
// dangling links), credential files, masked globs over many entries and unreadable
// directories. It returns the options and host of a launch there.
func memoFSLayout(t *testing.T, base string, rng *rand.Rand) (Options, Host) {
	t.Helper()
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	write := func(p, s string, mode os.FileMode) {
		mkdirs(t, filepath.Dir(p))
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, l string) {
		mkdirs(t, filepath.Dir(l))
		os.Remove(l)
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
	}
	ws := filepath.Join(base, "ws")
	home := filepath.Join(base, "home")
	out := filepath.Join(base, "out")
	mkdirs(t, ws, home, out)
	if rng.IntN(2) == 0 {
		for _, d := range []string{"objects", "refs/heads", "hooks"} {
			mkdirs(t, filepath.Join(ws, ".git", d))
		}
		write(filepath.Join(ws, ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
		cfg := "[core]\n\trepositoryformatversion = 0\n"
		if rng.IntN(2) == 0 {
			cfg += "\tpager = " + pick("mypager", "less", "bin/tool", "./run", "vi") + "\n"
		}
		if rng.IntN(2) == 0 {
			cfg += "[include]\n\tpath = " + pick("../inc.cfg", filepath.Join(out, "inc.cfg"), filepath.Join(home, "inc.cfg")) + "\n"
		}
		write(filepath.Join(ws, ".git", "config"), cfg, 0o644)
	}
	// The programs the settings name, and the PATH directories holding them.
	progs := []string{"mypager", "myeditor", "myssh", "mygpg", "git-credential-mine", "less", "vi", "git"}
	var path []string
	dirs := []string{
		filepath.Join(out, "bin1"), filepath.Join(out, "bin2"), filepath.Join(ws, "bin"),
		filepath.Join(ws, ".venv", "bin"), filepath.Join(out, "linkbin"), filepath.Join(out, "intows"),
		filepath.Join(out, "dangling"), filepath.Join(out, "closed"), ".", "",
		filepath.Join(out, "bin1", "..", "bin2"), filepath.Join(ws, "sub", "..", "bin"),
	}
	for range 2 + rng.IntN(6) {
		path = append(path, pick(dirs...))
	}
	path = append(path, "/usr/bin", "/bin")
	mkdirs(t, filepath.Join(out, "bin1"), filepath.Join(out, "bin2"), filepath.Join(ws, "bin"), filepath.Join(ws, ".venv", "bin"), filepath.Join(ws, "sub"))
	link(filepath.Join(out, "bin2"), filepath.Join(out, "linkbin"))
	link(filepath.Join(ws, "bin"), filepath.Join(out, "intows"))
	link(filepath.Join(out, "nowhere"), filepath.Join(out, "dangling"))
	mkdirs(t, filepath.Join(out, "closed"))
	write(filepath.Join(out, "closed", pick(progs...)), "#!/bin/sh\n", 0o755)
	for _, d := range []string{filepath.Join(out, "bin1"), filepath.Join(out, "bin2"), filepath.Join(ws, "bin"), filepath.Join(ws, ".venv", "bin"), ws} {
		for _, p := range progs {
			c := filepath.Join(d, p)
			switch rng.IntN(16) {
			case 0, 1, 2, 3:
				write(c, "#!/bin/sh\n", 0o755)
			case 4:
				write(c, "not a program\n", 0o644)
			case 5:
				mkdirs(t, c)
			case 6, 7:
				link(pick("/usr/bin/true", filepath.Join(out, "bin1", p), "../bin2/"+p, filepath.Join(ws, "bin", p), "../../out/bin1/"+p), c)
			case 8:
				link(filepath.Join(out, "nowhere", p), c)
			case 9:
				link(filepath.Join(out, "linkbin", p), c) // a loop when bin2 holds it
			}
		}
	}
	if rng.IntN(2) == 0 {
		if err := os.Chmod(filepath.Join(out, "closed"), 0o000); err != nil {
			t.Fatal(err)
		}
	}
	// The caller's git config files: global (maybe a symlink), an include.
	gcfg := "[core]\n"
	if rng.IntN(3) > 0 {
		gcfg += "\tpager = " + pick("mypager", "less -R", "mypager --x", filepath.Join(ws, "bin", "mypager")) + "\n"
	}
	if rng.IntN(3) > 0 {
		gcfg += "\teditor = " + pick("myeditor", "vi", "EDITOR=x myeditor") + "\n"
	}
	if rng.IntN(3) > 0 {
		gcfg += "\tsshCommand = " + pick("myssh -o x", "ssh") + "\n"
	}
	if rng.IntN(2) == 0 {
		gcfg += "[gpg]\n\tprogram = " + pick("mygpg", "gpg") + "\n"
	}
	if rng.IntN(2) == 0 {
		gcfg += "[credential]\n\thelper = " + pick("mine", "!mypager", "/usr/bin/true") + "\n"
	}
	if rng.IntN(2) == 0 {
		gcfg += "[include]\n\tpath = " + pick("inc.cfg", "~/inc.cfg", filepath.Join(out, "inc.cfg"), filepath.Join(ws, "inc.cfg")) + "\n"
	}
	write(filepath.Join(home, "inc.cfg"), "[core]\n\tpager = "+pick("mypager", "less")+"\n", 0o644)
	write(filepath.Join(out, "inc.cfg"), "[core]\n\teditor = "+pick("myeditor", "vi")+"\n", 0o644)
	write(filepath.Join(ws, "inc.cfg"), "[core]\n\tsshCommand = "+pick("myssh", "ssh")+"\n", 0o644)
	switch rng.IntN(3) {
	case 0:
		write(filepath.Join(home, ".gitconfig"), gcfg, 0o644)
	case 1:
		write(filepath.Join(out, "dotfiles", "gitconfig"), gcfg, 0o644)
		link(filepath.Join(out, "dotfiles", "gitconfig"), filepath.Join(home, ".gitconfig"))
	case 2:
		write(filepath.Join(home, ".config", "git", "config"), gcfg, 0o644)
	}
	// Credential files and masked globs over many entries, some unreadable.
	for _, c := range []string{".ssh/id_ed25519", ".aws/credentials", ".netrc", ".docker/config.json"} {
		if rng.IntN(2) == 0 {
			write(filepath.Join(home, c), "secret\n", 0o600)
		}
	}
	if rng.IntN(2) == 0 {
		link(filepath.Join(out, "nowhere"), filepath.Join(home, ".kube"))
	}
	for i := range 20 + rng.IntN(40) {
		write(filepath.Join(out, "m", "k"+strconv.Itoa(i)+pick(".key", ".pem", ".txt")), "", 0o644)
	}
	mkdirs(t, filepath.Join(out, "m", "sub1"), filepath.Join(out, "m", "sub2"), filepath.Join(ws, "sec", "a"))
	write(filepath.Join(ws, "sec", "a", "x.key"), "", 0o644)
	if rng.IntN(2) == 0 {
		if err := os.Chmod(filepath.Join(out, "m", "sub1"), 0o000); err != nil {
			t.Fatal(err)
		}
	}
	if rng.IntN(2) == 0 {
		if err := os.Chmod(filepath.Join(ws, "sec", "a"), 0o000); err != nil {
			t.Fatal(err)
		}
	}
	masks := []string{"/etc/shadow", "/etc/ssh/*_key", "/etc/sudoers*", filepath.Join(out, "m", "*.key"),
		filepath.Join(out, "m", "*", "*.pem"), filepath.Join(out, "m", "sub1", "x"), filepath.Join(ws, "sec", "*", "*.key"),
		filepath.Join(ws, "sec", "a", "x.key"), filepath.Join(out, "*", "k1*"), filepath.Join(out, "m", "sub1", "*.key"),
		filepath.Join(out, "closed", "*"), filepath.Join(ws, "sec", "a", "*.key")}
	rng.Shuffle(len(masks), func(i, j int) { masks[i], masks[j] = masks[j], masks[i] })
	masks = masks[:3+rng.IntN(len(masks)-3)]
	var mlist []string
	for _, m := range masks {
		mlist = append(mlist, strconv.Quote(m))
	}
	gitMode := pick("readonly", "commit")
	src := "extends: agent\nfilesystem:\n  git: " + gitMode + "\n  masked: [" + strings.Join(mlist, ", ") + "]\n"
	pol, err := Parse([]byte(src), "memofs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := Host{UID: os.Getuid(), GID: os.Getgid(), Root: rng.IntN(2) == 0, Home: home, Homes: []string{home},
		Cwd:     pick(ws, filepath.Join(ws, "sub"), filepath.Join(ws, "bin")),
		Environ: []string{"PATH=" + strings.Join(path, ":"), "HOME=" + home, "LANG=C"}}
	o := Options{Workspace: ws, Policy: pol, Args: []string{"/bin/true"}}
	return o, h
}

// TestMemoFSSameDecisions is policyfs's differential test: over generated host
// layouts (memoFSLayout), the policy step with the per-launch memory of lstat and
// readlink answers (the git guard's PATH lookups and config paths, the resolver
// chains, the masked globs' directory checks, the workspace's stat) decides exactly
// what it decides with every call made afresh: the same config field by field, notes
// and errors. The masks' unsearchable directories exist only for a caller other than
// root (root searches every directory): run the test binary as uid 65534 too (setpriv
// --reuid 65534 --regid 65534 --clear-groups, TMPDIR writable by it) to compare those.
func TestMemoFSSameDecisions(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 40
	}
	root := canonTempDir(t)
	kinds := map[string]int{}
	for seed := range n {
		rng := rand.New(rand.NewPCG(uint64(seed), 20))
		base := filepath.Join(root, strconv.Itoa(seed))
		o, h := memoFSLayout(t, base, rng)
		fresh := memoFSRun(t, false, o, h)
		memo := memoFSRun(t, true, o, h)
		switch {
		case fresh.err != "":
			kinds["error"]++
			if os.Getenv("MEMOFS_SHOW") != "" {
				t.Logf("seed %d: %s", seed, fresh.err)
			}
		case fresh.notes != "":
			kinds["noted"]++
		default:
			kinds["plain"]++
		}
		if fresh.err != memo.err || fresh.notes != memo.notes {
			t.Errorf("seed %d: the policy step decides differently with memoFS:\nfresh: err %q notes %q\nmemo:  err %q notes %q", seed, fresh.err, fresh.notes, memo.err, memo.notes)
		}
		if fresh.spec != memo.spec {
			t.Errorf("seed %d: the configs differ with memoFS, first %s", seed, firstDiff(fresh.spec, memo.spec))
		}
		// chmod'ed directories back, so that TempDir's cleanup can remove them
		filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if d != nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	}
	t.Logf("outcomes over %d layouts: %v", n, kinds)
	// the generator must reach each kind of outcome, or the comparison proves little
	for _, k := range []string{"error", "noted", "plain"} {
		if kinds[k] == 0 {
			t.Errorf("no layout gave a %s outcome: the generator no longer covers it", k)
		}
	}
}

// firstDiff shows where a and b first differ, with some context.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-120)
	return fmt.Sprintf("at %d: ...%s|%s vs ...%s|%s", i, a[lo:i], a[i:min(len(a), i+120)], b[lo:i], b[i:min(len(b), i+120)])
}

// TestResolverFresh: a resolver made by outside looks afresh at the paths its fresh
// function names (a writable tree, which a running sandbox can change while this
// launch is planned) and remembers the rest, for its parent too. It fails with the
// fresh check left out of lstat, stat or readlink.
func TestResolverFresh(t *testing.T) {
	d := canonTempDir(t)
	w, o := filepath.Join(d, "w"), filepath.Join(d, "o")
	mkdirs(t, w, o)
	parent := newResolver()
	r := parent.outside(func(p string) bool { return under(p, w) })
	for _, dir := range []string{w, o} {
		if err := os.Symlink("a", filepath.Join(dir, "l")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r.lstat(filepath.Join(dir, "f"))
		r.stat(filepath.Join(dir, "f"))
		r.readlink(filepath.Join(dir, "l"))
	}
	// the host changes within the launch: a file becomes a directory, a link moves
	for _, dir := range []string{w, o} {
		os.Remove(filepath.Join(dir, "f"))
		mkdirs(t, filepath.Join(dir, "f"))
		os.Remove(filepath.Join(dir, "l"))
		if err := os.Symlink("b", filepath.Join(dir, "l")); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := r.lstat(filepath.Join(w, "f")); err != nil || !fi.IsDir() {
		t.Errorf("lstat in the writable tree: %v, %v; want the directory it is now", fi, err)
	}
	if fi, err := r.stat(filepath.Join(w, "f")); err != nil || !fi.IsDir() {
		t.Errorf("stat in the writable tree: %v, %v; want the directory it is now", fi, err)
	}
	if l, _ := r.readlink(filepath.Join(w, "l")); l != "b" {
		t.Errorf("readlink in the writable tree: %q, want b (as it is now)", l)
	}
	for _, rr := range []*resolver{r, parent} {
		if fi, err := rr.lstat(filepath.Join(o, "f")); err != nil || fi.IsDir() {
			t.Errorf("lstat outside: %v, %v; want the file remembered", fi, err)
		}
		if l, _ := rr.readlink(filepath.Join(o, "l")); l != "a" {
			t.Errorf("readlink outside: %q, want a (remembered)", l)
		}
	}
	if fi, err := r.stat(filepath.Join(o, "f")); err != nil || fi.IsDir() {
		t.Errorf("stat outside: %v, %v; want the file remembered", fi, err)
	}
}

// readDirCappedOS is readDirCapped as it was before openNoPoll: os.Open, then
// ReadDir (the reference of TestReadDirCappedSame).
func readDirCappedOS(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []os.DirEntry
	for {
		ents, err := f.ReadDir(1024)
		out = append(out, ents...)
		if len(out) > maxDirEntries {
			return nil, fmt.Errorf("%s holds more than %d entries; gosbx does not read further", dir, maxDirEntries)
		}
		if err == io.EOF || (err == nil && len(ents) == 0) {
			break
		}
		if err != nil {
			return out, err
		}
	}
	slices.SortFunc(out, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// TestReadDirCappedSame: readDirCapped (openNoPoll) gives the entries and errors it
// gave with os.Open: a directory of many kinds of entries, a file, a missing path, a
// symlink to a directory, an unreadable directory.
func TestReadDirCappedSame(t *testing.T) {
	d := canonTempDir(t)
	mkdirs(t, filepath.Join(d, "dir", "sub"), filepath.Join(d, "closed"))
	for _, f := range []string{"b", "a", "c.x"} {
		if err := os.WriteFile(filepath.Join(d, "dir", f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("nowhere", filepath.Join(d, "dir", "dangling"))
	os.Symlink(filepath.Join(d, "dir"), filepath.Join(d, "link"))
	os.Chmod(filepath.Join(d, "closed"), 0o000)
	t.Cleanup(func() { os.Chmod(filepath.Join(d, "closed"), 0o755) })
	for _, p := range []string{"dir", "dir/a", "missing", "link", "closed", "dir/dangling"} {
		p = filepath.Join(d, p)
		got, gerr := readDirCapped(p)
		want, werr := readDirCappedOS(p)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%s: error %v, with os.Open %v", p, gerr, werr)
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d entries, with os.Open %d", p, len(got), len(want))
			continue
		}
		for i := range got {
			if got[i].Name() != want[i].Name() || got[i].Type() != want[i].Type() || got[i].IsDir() != want[i].IsDir() {
				t.Errorf("%s: entry %d is %v, with os.Open %v", p, i, got[i], want[i])
			}
		}
	}
}

// TestReadIndexGitlinks: readIndex finds exactly the gitlinks (mode 160000) that
// git ls-files -s lists, in indexes of versions 2, 3 (extended flags) and 4 (prefix
// compressed names), among many regular entries whose names it no longer keeps.
func TestReadIndexGitlinks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, ver := range []string{"2", "3", "4"} {
		t.Run("v"+ver, func(t *testing.T) {
			d := canonTempDir(t)
			git := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("git", append([]string{"-C", d}, args...)...)
				cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+d)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			git("init", "-q")
			var want []string
			for i := range 300 {
				name := fmt.Sprintf("dir%d/sub/file-%03d.txt", i%7, i)
				if i%37 == 0 {
					name = fmt.Sprintf("mods/m%03d", i)
					git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+","+name)
					want = append(want, name)
					continue
				}
				mkdirs(t, filepath.Join(d, filepath.Dir(name)))
				if err := os.WriteFile(filepath.Join(d, name), []byte(name), 0o644); err != nil {
					t.Fatal(err)
				}
				git("add", name)
			}
			if ver == "3" {
				git("update-index", "--skip-worktree", "dir1/sub/file-001.txt")
			}
			git("update-index", "--index-version", ver)
			var fromGit []string
			for _, l := range strings.Split(git("ls-files", "-s"), "\n") {
				if f := strings.Fields(l); len(f) == 4 && f[0] == "160000" {
					fromGit = append(fromGit, f[3])
				}
			}
			got, _, err := readIndex(filepath.Join(d, ".git", "index"), 20, newReadBudget())
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)
			if !slices.Equal(fromGit, want) || !slices.Equal(got, fromGit) {
				t.Errorf("gitlinks: readIndex %q, git ls-files %q, made %q", got, fromGit, want)
			}
		})
	}
}
