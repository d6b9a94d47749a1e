package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// toolchainState is what Effective resolved for filesystem.toolchains.
type toolchainState struct {
	binds   []ToolchainBind
	skipped []ToolchainSkip
	// subst replaces a caller's PATH entry (as written) inside: a shim directory by the
	// bin directories of the versions its shims would run.
	subst map[string][]string
	// prepend are bin directories of the listed roots, put first on PATH.
	prepend []string
	// managers are the roots of the version managers whose shims are on the caller's
	// PATH (versionDir)
	managers []string
}

// toolchainHost is what resolution reads of the launch: the caller's environment and
// the trees the policy already shows.
type toolchainHost struct {
	home     string   // the caller's home, canonical
	homes    []string // every name of it
	from     string   // where version files are searched from, upward (the command's directory)
	writable []string // the workspace and read-write binds shown at their own path, canonical
	// written are the trees a sandbox writes (writable, every read-write bind's source,
	// the cache root), canonical: nothing there chooses a bind source (toolchaintrust.go)
	written []string
	bound   []string // the policy's read-only binds, canonical
	creds   []string // credential paths, canonical
	environ map[string]string
}

// maxLinkHops bounds a symlink chain (the kernel's own limit is 40).
const maxLinkHops = 40

// maxBinEntries bounds how many entries of one bound bin directory are looked at for links.
const maxBinEntries = 4096

type tcResolver struct {
	r  *resolver
	h  toolchainHost
	st toolchainState
}

// resolveToolchains finds the toolchain roots to bind read-only for t on host h: for
// auto, the root of each PATH entry the policy does not show already (a pyenv-style
// shim directory by the version its shims would run), what the links of those
// directories lead to, and the interpreter of the workspace's venvs; then the listed
// roots. Nothing is created; a path that cannot be read is skipped with its reason.
func resolveToolchains(t *Toolchains, h toolchainHost) (toolchainState, error) {
	tr := &tcResolver{r: newResolver(), h: h, st: toolchainState{subst: map[string][]string{}}}
	if t == nil || t.Mode == ToolchainNone {
		return tr.st, nil
	}
	if t.Mode == ToolchainAuto {
		for _, e := range filepath.SplitList(h.environ["PATH"]) {
			tr.pathEntry(e)
		}
		tr.venvs()
	}
	// A root named is asked for: one that cannot be bound stops the launch, as a
	// required --ro does.
	for _, p := range t.Paths {
		canon, err := tr.r.evalSymlinks(p)
		if err != nil {
			return tr.st, errorf("toolchain", p, err, "cannot resolve the toolchain root")
		}
		if !tr.covered(canon) {
			if why := tr.refused(canon); why != "" {
				return tr.st, errorf("toolchain", p, nil, "refusing to bind %s: %s", canon, why)
			}
		}
		tr.add(canon, "filesystem.toolchains (or --toolchain) names "+p)
		if isDir(filepath.Join(canon, "bin")) {
			tr.st.prepend = append(tr.st.prepend, filepath.Join(canon, "bin"))
		}
	}
	return tr.st, nil
}

func (tr *tcResolver) skip(p, why string) {
	tr.st.skipped = append(tr.st.skipped, ToolchainSkip{Path: p, Why: why})
}

// pathEntry resolves one entry of the caller's PATH.
func (tr *tcResolver) pathEntry(e string) {
	if e == "" || !filepath.IsAbs(e) {
		if e != "" {
			tr.skip(e, "a relative PATH entry (it would resolve from the workspace)")
		}
		return
	}
	e = filepath.Clean(e)
	canon, err := tr.r.evalSymlinks(e)
	if err != nil {
		return // a PATH entry that does not exist here is no toolchain
	}
	if fi, err := os.Stat(canon); err != nil || !fi.IsDir() {
		return
	}
	if tr.covered(canon) {
		return
	}
	why := "PATH entry " + e
	if tr.shims(e, canon) {
		return
	}
	if mgr := filepath.Dir(canon); filepath.Base(canon) == "bin" && isDir(filepath.Join(mgr, "shims")) &&
		(isDir(filepath.Join(mgr, "versions")) || isDir(filepath.Join(mgr, "installs"))) {
		// pyenv's own bin (the pyenv command): the manager with its state, not a
		// toolchain; its shims are resolved to their version instead
		tr.skip(canon, why+": the version manager's own commands (its shims are resolved to the version they run)")
		return
	}
	if tr.addAll(tr.rootsOf(canon), why) {
		tr.links(canon, why, 0)
		if canon == filepath.Join(tr.h.home, ".cargo", "bin") {
			// rustup's proxies there run the toolchains of RUSTUP_HOME (default ~/.rustup)
			rh := tr.h.environ["RUSTUP_HOME"]
			if rh == "" {
				rh = filepath.Join(tr.h.home, ".rustup")
			}
			if c, err := tr.r.evalSymlinks(rh); err == nil && !tr.covered(c) {
				tr.add(c, why+": rustup's toolchains, which its proxies run")
			}
		}
	}
}

// managers are the version managers whose shims select a version by a variable and a
// file (pyenv, and rbenv and nodenv, which share its layout).
var managers = []struct{ dir, rootVar, versionVar, file string }{
	{".pyenv", "PYENV_ROOT", "PYENV_VERSION", ".python-version"},
	{".rbenv", "RBENV_ROOT", "RBENV_VERSION", ".ruby-version"},
	{".nodenv", "NODENV_ROOT", "NODENV_VERSION", ".node-version"},
}

// shims resolves a shim directory (ROOT/shims) to what its shims would run: a shim
// runs `pyenv exec`, which needs the whole manager and its state; instead the selected
// versions are bound and their bin directories take the shim directory's place on PATH.
// It reports whether canon was a shim directory (bound or not).
func (tr *tcResolver) shims(e, canon string) bool {
	if filepath.Base(canon) != "shims" {
		return false
	}
	root := filepath.Dir(canon)
	why := "PATH entry " + e
	for _, m := range managers {
		named := tr.h.environ[m.rootVar]
		if c, err := tr.r.evalSymlinks(named); named == "" || err != nil || c != root {
			if filepath.Base(root) != m.dir {
				continue
			}
		}
		tr.st.managers = append(tr.st.managers, root)
		versions, from := tr.selectVersion(root, m.versionVar, m.file)
		if len(versions) == 0 {
			tr.skip(canon, why+": "+strings.TrimPrefix(m.dir, ".")+" shims, no version selected ("+from+")")
			return true
		}
		for _, v := range versions {
			tr.version(e, filepath.Join(root, "versions", v), why+" ("+strings.TrimPrefix(m.dir, ".")+" version "+v+" from "+from+")")
		}
		return true
	}
	if !isDir(filepath.Join(root, "installs")) {
		tr.skip(canon, why+": shims of an unknown version manager (they run it, not a toolchain)")
		return true
	}
	{ // asdf, mise: installs/TOOL/VERSION
		tr.st.managers = append(tr.st.managers, root)
		tools, from := tr.toolVersions()
		if len(tools) == 0 {
			tr.skip(canon, why+": shims of "+root+", no .tool-versions found")
			return true
		}
		for _, tv := range tools {
			for _, v := range tv[1:] {
				dir := filepath.Join(root, "installs", tv[0], v)
				if isDir(dir) {
					tr.version(e, dir, why+" ("+tv[0]+" "+v+" from "+from+")")
					break
				}
			}
		}
	}
	return true
}

// version binds one selected version directory and puts its bin/ in place of the
// shim directory e.
func (tr *tcResolver) version(e, dir, why string) {
	c, err := tr.r.evalSymlinks(dir)
	if err != nil {
		tr.skip(dir, why+": not installed")
		return
	}
	if tr.covered(c) || tr.add(c, why) {
		tr.st.subst[e] = append(tr.st.subst[e], filepath.Join(c, "bin"))
	}
}

// selectVersion is pyenv's choice of version (pyenv-version-name): the variable, else
// the first version file from the command's directory upward, else ROOT/version; the
// versions it names ("system" dropped, and every word that is not a version name:
// validVersion) and where they came from.
func (tr *tcResolver) selectVersion(root, envVar, file string) ([]string, string) {
	pick := func(list []string) []string {
		var out []string
		for _, v := range list {
			// a version is a directory name: never a path out of versions/
			if v != "system" && validVersion(v) {
				out = append(out, v)
			}
		}
		return out
	}
	if v := tr.h.environ[envVar]; v != "" {
		return pick(strings.Split(v, ":")), envVar
	}
	for d := tr.h.from; d != ""; d = parentDir(d) {
		if words, ok := tr.readWords(filepath.Join(d, file)); ok {
			return pick(words), filepath.Join(d, file)
		}
	}
	words, _ := tr.readWords(filepath.Join(root, "version"))
	return pick(words), filepath.Join(root, "version")
}

// toolVersions reads asdf's .tool-versions from the command's directory upward, else
// the home's: each line TOOL VERSION...
func (tr *tcResolver) toolVersions() ([][]string, string) {
	dirs := []string{}
	for d := tr.h.from; d != ""; d = parentDir(d) {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, tr.h.home)
	for _, d := range dirs {
		f := filepath.Join(d, ".tool-versions")
		lines, ok := tr.readToolFile(f)
		if !ok {
			continue
		}
		var out [][]string
		for _, l := range lines {
			w := strings.Fields(l)
			if len(w) >= 2 && validVersion(w[0]) {
				var vs []string
				for _, v := range w[1:] {
					if validVersion(v) {
						vs = append(vs, v)
					}
				}
				out = append(out, append([]string{w[0]}, vs...))
			}
		}
		return out, f
	}
	return nil, ""
}

// links follows the symbolic links in a bound bin directory (~/.local/bin's are often
// into pipx venvs, or a toolchain elsewhere) to an executable file or a directory, and
// binds the roots they lead to.
func (tr *tcResolver) links(dir, why string, depth int) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(maxBinEntries)
	f.Close()
	slices.Sort(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		fi, err := tr.r.lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		// only a link to a program (or a directory) is a toolchain's: one to another file
		// (~/bin/cfg -> ~/secret/key) would bind that file's directory
		// (a chain that does not resolve goes on to follow, which says why)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && (!st.Mode().IsRegular() || st.Mode()&0o111 == 0) {
			continue
		}
		tr.follow(p, why+": link "+p, depth, false)
	}
}

// follow binds what the symlink chain from p passes through and ends at, where the
// sandbox does not show it already. A hop reached through a tree a sandbox writes (the
// link, or a directory on its way, lies in one), or every hop when tainted (p came from
// such a tree: a venv there), is the sandbox's choice: only a version directory of a
// version manager on the caller's PATH is bound for it (versionDir), and the skip names
// no host path the sandbox chose (no oracle of what exists there).
func (tr *tcResolver) follow(p, why string, depth int, tainted bool) {
	c, err := followChain(tr.r, p, tr.h.written)
	if err != nil {
		if tainted || c.taint < len(c.hops) {
			tr.skip(p, why+": a link a sandbox could have written, not followed further")
		} else {
			tr.skip(p, why+": "+err.Error())
		}
		return
	}
	for i, hop := range c.hops[1:] {
		i++
		dir := filepath.Dir(hop)
		if i == len(c.hops)-1 {
			if fi, err := tr.r.lstat(hop); err == nil && fi.IsDir() {
				dir = hop
			}
		}
		if tr.covered(hop) {
			continue
		}
		if tainted || c.tainted(i) {
			if v := tr.versionDir(dir); v != "" {
				tr.add(v, why+" → "+hop)
				continue
			}
			tr.skip(p, why+": a link a sandbox could have written leads outside the sandbox, not to a version of a version manager on PATH: not bound")
			return
		}
		if tr.addAll(tr.rootsOf(dir), why+" → "+hop) && depth < 2 {
			// a venv's bin/ (pipx's): its interpreter's links and home too
			for _, v := range []string{dir, filepath.Dir(dir)} {
				if isFile(filepath.Join(v, "pyvenv.cfg")) {
					tr.venv(v, why, depth+1, false)
					break
				}
			}
		}
	}
}

// venvs binds the interpreter of the workspace's venvs (.venv, venv, and $VIRTUAL_ENV):
// their bin/python is a symlink, often to a pyenv version outside. A venv in a tree a
// sandbox writes (or reached through a link there) leads only to what follow allows a
// tainted chain.
func (tr *tcResolver) venvs() {
	var cands []string
	for _, w := range tr.h.writable[:min(1, len(tr.h.writable))] {
		cands = append(cands, filepath.Join(w, ".venv"), filepath.Join(w, "venv"))
	}
	if v := tr.h.environ["VIRTUAL_ENV"]; filepath.IsAbs(v) {
		cands = append(cands, filepath.Clean(v))
	}
	seen := map[string]bool{}
	for _, v := range cands {
		ch, err := followChain(tr.r, v, tr.h.written)
		if err != nil {
			continue
		}
		c := ch.last()
		if seen[c] || !isDir(c) || !isFile(filepath.Join(c, "pyvenv.cfg")) {
			continue
		}
		seen[c] = true
		tr.venv(c, "venv "+v, 0, ch.taint < len(ch.hops) || under(c, tr.h.written...))
	}
}

// venv binds what a venv's interpreter needs: where bin/python's links lead, and the
// base installation pyvenv.cfg's home names (a directory; for a tainted venv only a
// version directory, as follow).
func (tr *tcResolver) venv(v, why string, depth int, tainted bool) {
	for _, py := range []string{"python3", "python"} {
		if _, err := tr.r.lstat(filepath.Join(v, "bin", py)); err == nil {
			tr.follow(filepath.Join(v, "bin", py), why+": bin/"+py, depth, tainted)
			break
		}
	}
	lines, _ := tr.readToolFile(filepath.Join(v, "pyvenv.cfg"))
	for _, l := range lines {
		k, val, ok := strings.Cut(l, "=")
		if !ok || strings.TrimSpace(k) != "home" {
			continue
		}
		home := strings.TrimSpace(val)
		if !filepath.IsAbs(home) {
			continue
		}
		ch, err := followChain(tr.r, home, tr.h.written)
		if err != nil || !isDir(ch.last()) {
			if !tainted {
				tr.skip(home, why+": pyvenv.cfg home: not a directory")
			}
			continue
		}
		c := ch.last()
		if tr.covered(c) {
			continue
		}
		if tainted || ch.taint < len(ch.hops) {
			if d := tr.versionDir(c); d != "" {
				tr.add(d, why+": pyvenv.cfg home")
			} else {
				tr.skip(v, why+": pyvenv.cfg home of a venv a sandbox could have written: not a version of a version manager on PATH, not bound")
			}
			continue
		}
		tr.addAll(tr.rootsOf(c), why+": pyvenv.cfg home "+home)
	}
}

// rootsOf are the toolchain roots of a bin directory: its parent (nvm's node version,
// pyenv's version, /opt/tool) when that is a prefix (prefixParts: a known root, or
// nothing but a prefix's layout) or its layout directories when it holds other things
// too, unless that parent is a home-like directory that holds more than the toolchain
// (the home, ~/.local, ~/.cargo with its credentials, ~/go, a top-level directory):
// then the directory itself. Any other directory is its own root.
func (tr *tcResolver) rootsOf(dir string) []string {
	if filepath.Base(dir) != "bin" {
		return []string{dir}
	}
	parent := filepath.Dir(dir)
	h := tr.h.home
	stop := append([]string{filepath.Join(h, ".local"), filepath.Join(h, ".cargo"), filepath.Join(h, "go")}, tr.h.homes...)
	if depth(parent) < 2 || contains(stop, parent) || tr.refused(parent) != "" {
		return []string{dir}
	}
	return tr.prefixParts(parent)
}

// addAll is add for each of roots; it reports whether all are visible inside now.
func (tr *tcResolver) addAll(roots []string, why string) bool {
	ok := true
	for _, r := range roots {
		ok = tr.add(r, why) && ok
	}
	return ok
}

// refused says why root must never be bound ("" when it may be).
func (tr *tcResolver) refused(root string) string {
	switch {
	case root == "/":
		return "the root directory"
	case depth(root) < 2:
		return "a top-level directory"
	case under(root, "/proc", "/dev", "/sys", "/run/user", "/run/gosbx"):
		return "the kernel's or a runtime directory"
	case under(tr.h.home, root):
		return "the home directory whole, or a directory holding it"
	}
	for _, h := range tr.h.homes {
		if under(h, root) {
			return "the home directory whole, or a directory holding it"
		}
	}
	if x := tr.h.environ["XDG_RUNTIME_DIR"]; filepath.IsAbs(x) && under(filepath.Clean(x), root) {
		return "holds the runtime directory " + x
	}
	for _, c := range tr.h.creds {
		if under(root, c) || under(c, root) {
			return "a credential path (" + c + ") is, holds or lies inside it"
		}
	}
	for _, w := range tr.h.written {
		if under(w, root) {
			return "holds the workspace, a read-write bind or the cache (" + w + ")"
		}
	}
	return ""
}

// covered: the sandbox shows p already (a read-only bind, the workspace, a read-write
// bind, a root bound for a toolchain).
func (tr *tcResolver) covered(p string) bool {
	if under(p, tr.h.bound...) || under(p, tr.h.writable...) {
		return true
	}
	for _, b := range tr.st.binds {
		if under(p, b.Path) {
			return true
		}
	}
	return false
}

// add binds root read-only unless it is refused or shown already; it reports whether
// root is visible inside now.
func (tr *tcResolver) add(root, why string) bool {
	if tr.covered(root) {
		return true
	}
	if r := tr.refused(root); r != "" {
		tr.skip(root, why+": "+r)
		return false
	}
	// a root that holds roots bound before replaces them
	tr.st.binds = slices.DeleteFunc(tr.st.binds, func(b ToolchainBind) bool { return under(b.Path, root) })
	tr.st.binds = append(tr.st.binds, ToolchainBind{Path: root, Why: why})
	return true
}

// linkChain follows the symbolic link p hop by hop: every path the chain passes
// through, p first (directories resolved), the last one not a symlink; ELOOP past
// maxLinkHops, the lstat error of a hop that does not exist.
func linkChain(r *resolver, p string) ([]string, error) {
	c, err := followChain(r, p, nil)
	return c.hops, err
}

func isDir(p string) bool  { fi, err := os.Stat(p); return err == nil && fi.IsDir() }
func isFile(p string) bool { fi, err := os.Stat(p); return err == nil && fi.Mode().IsRegular() }

func parentDir(d string) string {
	if d == "/" || d == "." || d == "" {
		return ""
	}
	return filepath.Dir(d)
}

// maxVersionFile bounds what is read of a version file or pyvenv.cfg.
const maxVersionFile = 64 << 10

// readWords is readToolFile's lines split into words.
func (tr *tcResolver) readWords(p string) ([]string, bool) {
	lines, ok := tr.readToolFile(p)
	var out []string
	for _, l := range lines {
		out = append(out, strings.Fields(l)...)
	}
	return out, ok
}
