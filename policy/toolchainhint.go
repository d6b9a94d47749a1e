package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// NotFoundHint explains a command the sandbox spec could not find or start for want
// of a file (execve(2) ENOENT, exit 127) when the host has it: name is the command as
// given (args[0]), path what the sandbox tried (name itself when PATH had nothing; a
// path when the file was found but its symlink target or #! interpreter was missing).
// It reads the host only and changes nothing: the exit status stays the command's
// 127. It returns "" when the host has nothing to offer either, e.g.
//
//	python3: not found inside the sandbox (on the host it is /root/.pyenv/shims/python3): add --toolchain /root/.pyenv/versions/3.12.1 or --toolchain auto
func (p *Policy) NotFoundHint(h Host, spec *config.Config, name, path string) string {
	tr := &tcResolver{r: newResolver(), h: p.toolchainHost(h, p.Workspace.Path), st: toolchainState{subst: map[string][]string{}}}
	v := visibility(spec)
	auto := true // --toolchain auto would bind it
	// fix names the flags that make it run: flag is "--ro" where the command's path is
	// already right inside (an absolute path, an entry of PATH), "--toolchain" where
	// PATH must change too (a shim directory's entry: the version's bin/ goes first on
	// PATH only through --toolchain). A root inside another one named is left out.
	fix := func(flag string, roots []string) string {
		var kept []string
		for _, r := range roots {
			if tr.refused(r) == "" && !slices.Contains(kept, r) {
				kept = append(kept, r)
			}
		}
		var adds []string
		for _, r := range kept {
			nested := false
			for _, o := range kept {
				nested = nested || (o != r && under(r, o))
			}
			if !nested {
				adds = append(adds, flag+" "+Shown(r))
			}
		}
		if len(adds) == 0 {
			return ""
		}
		s := ": add " + strings.Join(adds, " ")
		if t := p.Filesystem.Toolchains; auto && (t == nil || t.Mode != ToolchainAuto) {
			s += " or --toolchain auto"
		}
		return s
	}
	if !strings.Contains(name, "/") && path == name {
		hostPath := hostLookPath(name, tr.h.environ["PATH"])
		if hostPath == "" {
			return ""
		}
		var roots []string
		flag := "--ro"
		if dir := filepath.Dir(hostPath); filepath.Base(dir) == "shims" {
			// --ro would bind the version, but PATH inside still leads to the shim
			flag = "--toolchain"
			// a shim: what it would run is the manager's selected version
			if c, err := tr.r.evalSymlinks(dir); err == nil {
				tr.shims(dir, c)
			}
			for _, bin := range tr.st.subst[dir] {
				if isFile(filepath.Join(bin, name)) {
					roots = append(roots, filepath.Dir(bin))
				}
			}
			if len(roots) == 0 {
				// the selected version lacks it (pyenv says "command not found" too):
				// the installed versions that have it
				auto = false
				m, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "versions", "*", "bin", name))
				for _, f := range m {
					roots = append(roots, filepath.Dir(filepath.Dir(f)))
				}
			}
		} else {
			roots = tr.outside(hostPath, v)
		}
		h := Shown(name) + ": not found inside the sandbox (on the host it is " + Shown(hostPath) + ")" + fix(flag, roots)
		if n := p.EmptyRootNote(); n != "" {
			h += " (" + n + ")"
		}
		return h
	}
	abs := path
	if !filepath.IsAbs(abs) && spec.Process != nil {
		abs = filepath.Join(spec.Process.Cwd, abs)
	}
	c, err := followChain(tr.r, abs, tr.h.written)
	if err != nil {
		return ""
	}
	// A path in a tree a sandbox writes (./tool, .venv/bin/python, a script's #! line)
	// is the sandbox's choice: the hint then names only roots auto binds or would for
	// the caller's PATH (its roots, a version of a version manager on it), so that it
	// is no oracle of what exists on the host and recommends no root the sandbox chose.
	tainted := c.taint < len(c.hops)
	trusted := func(roots []string) bool {
		if !tainted {
			return true
		}
		if tr.st.managers == nil {
			tr.st.managers = []string{}
			for _, e := range filepath.SplitList(tr.h.environ["PATH"]) {
				tr.pathEntry(e)
			}
		}
		for _, r := range roots {
			if tr.versionDir(r) == "" && !tr.autoBound(r) {
				return false
			}
		}
		return true
	}
	if roots := tr.outside(abs, v); len(roots) > 0 {
		if !trusted(roots) {
			return ""
		}
		return Shown(path) + ": its interpreter " + Shown(c.last()) + " (where its symlink leads) is outside the sandbox" + fix("--ro", roots)
	}
	exe, target := Shown(path), c.last()
	if interp := shebang(c.last()); filepath.IsAbs(interp) {
		tainted = tainted || under(c.last(), tr.h.written...)
		if roots := tr.outside(interp, v); len(roots) > 0 && trusted(roots) {
			// a venv's pip: its #! names the venv's python, inside the workspace; the
			// symlink's target is what is outside (trial finding 8)
			if ic, err := followChain(tr.r, interp, nil); err == nil && ic.last() != interp {
				return Shown(path) + ": its #! interpreter " + Shown(interp) + " is a symlink to " + Shown(ic.last()) + ", which is outside the sandbox" + fix("--ro", roots)
			}
			return Shown(path) + ": its #! interpreter " + Shown(interp) + " is outside the sandbox" + fix("--ro", roots)
		}
		if l := missingLink(spec, interp); l != "" && (!tainted || depth(l) == 1) {
			return Shown(path) + ": its #! interpreter " + Shown(interp) + " is not in the sandbox (" + Shown(l) + " is a symlink on the host, not made inside): add --ro " + Shown(l)
		}
		ic, err := followChain(tr.r, interp, nil)
		if err != nil {
			return ""
		}
		exe, target = Shown(path)+"'s #! interpreter "+Shown(interp), ic.last()
	}
	// shown, yet the kernel found no file: the ELF interpreter (ld.so) or, for the
	// loader itself, a library is missing (an empty root, --ro /usr/bin alone)
	return loaderHint(tr.r, spec, exe, target, v, p.EmptyRootNote())
}

// autoBound: root lies in a root auto binds for the caller's PATH (resolved in tr).
func (tr *tcResolver) autoBound(root string) bool {
	for _, b := range tr.st.binds {
		if under(root, b.Path) {
			return true
		}
	}
	return false
}

// outside lists the toolchain roots of the files the symlink chain from p passes through
// that the sandbox does not show (visible says which it does).
func (tr *tcResolver) outside(p string, visible func(string) bool) []string {
	hops, err := linkChain(tr.r, p)
	if err != nil {
		return nil
	}
	var roots []string
	for _, hop := range hops {
		if !visible(hop) {
			for _, r := range tr.rootsOf(filepath.Dir(hop)) {
				if slices.Contains(roots, r) {
					continue
				}
				roots = append(roots, r)
				if r == filepath.Join(tr.h.home, ".cargo", "bin") && isDir(filepath.Join(tr.h.home, ".rustup")) {
					roots = append(roots, filepath.Join(tr.h.home, ".rustup")) // what rustup's proxies run
				}
			}
		}
	}
	return roots
}

// visibility says whether a host path is seen inside at its own path under spec: the
// mount with the longest destination holding it decides (a bind of the same path
// shows it; a tmpfs, another bind or no mount hides it).
func visibility(spec *config.Config) func(string) bool {
	return func(p string) bool {
		best, shown := -1, false
		for _, m := range spec.Mounts {
			if under(p, m.Destination) && len(m.Destination) > best {
				best = len(m.Destination)
				shown = m.Type == "bind" && m.Source == m.Destination
			}
		}
		return shown
	}
}

// hostLookPath finds name on the caller's PATH as execvp(3) would: the first
// executable regular file (symlinks followed); "" if none.
func hostLookPath(name, path string) string {
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue // relative entries resolve from the caller's directory, not the sandbox's
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// shebang is the interpreter a script's #! line names ("" for none): p is the
// canonical path of the script (the end of its link chain), opened as openNoLinks does,
// so that a link swapped in since is not followed onto a device.
func shebang(p string) string {
	fd, size, ok := openNoLinks(p)
	if !ok {
		return ""
	}
	defer unix.Close(fd)
	b, _ := readFd(fd, size, 256)
	line, _, _ := strings.Cut(string(b), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	if w := strings.Fields(rest); len(w) > 0 {
		return w[0]
	}
	return ""
}

// toolchainHost is what toolchain resolution reads of host h for this effective
// policy, ws its canonical workspace.
func (p *Policy) toolchainHost(h Host, ws string) toolchainHost {
	r := newResolver()
	th := toolchainHost{homes: h.Homes, creds: p.Filesystem.Credentials, environ: map[string]string{}}
	th.home = p.home
	if c, err := r.evalSymlinks(p.home); err == nil {
		th.home = c
	}
	for _, kv := range h.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			th.environ[k] = v
		}
	}
	th.writable = []string{ws}
	th.written = []string{ws}
	for _, b := range p.Filesystem.ReadWrite {
		c, err := r.evalSymlinks(b.Path)
		if err != nil {
			continue
		}
		if b.Dest == "" {
			th.writable = append(th.writable, c)
		}
		th.written = append(th.written, c) // --rw SRC:DST: the sandbox writes SRC too
	}
	// in git commit mode a linked worktree's common git dir (<repo>/.git, outside the
	// tree) is bound read-write too (guardGit), so a sandbox writes it: nothing there
	// chooses a bind source, and no root that holds it is bound (the main checkout)
	if p.Filesystem.Git == GitCommit {
		for _, t := range slices.Clone(th.written) {
			if c := linkedCommonDir(t); c != "" {
				th.written = append(th.written, c)
			}
		}
	}
	// every workspace's cache is some sandbox's to write, this launch's or not
	if c, err := CacheRoot(h); err == nil {
		if root, err := r.evalSymlinks(c.Root()); err == nil {
			th.written = append(th.written, root)
		}
	}
	for _, b := range p.Filesystem.ReadOnly {
		if c, err := r.evalSymlinks(b.Path); err == nil && b.Dest == "" {
			th.bound = append(th.bound, c)
		}
	}
	th.from = ws
	if c, err := r.evalSymlinks(h.Cwd); err == nil && under(c, ws) {
		th.from = c
	}
	return th
}

// linkedCommonDir is the common git dir of the linked worktree tree (whose .git is a
// file naming <common>/worktrees/<name>, whose commondir names <common>), canonical, or
// "" for any other tree. Read without the checks guardGit makes before binding it: a
// path added to toolchainHost.written only narrows what toolchains may bind.
func linkedCommonDir(tree string) string {
	dotgit := filepath.Join(tree, ".git")
	if st, err := os.Lstat(dotgit); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	gd, err := gitdirOf(dotgit)
	if err != nil || gd == "" {
		return ""
	}
	c, err := commondirOf(gd)
	if err != nil || c == "" || filepath.Dir(gd) != filepath.Join(c, "worktrees") {
		return ""
	}
	return c
}
