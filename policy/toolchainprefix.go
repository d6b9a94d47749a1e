package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// prefixLayout are the entries of an installation prefix (GNU coding standards'
// directory variables, hier(7)'s /usr/local) a toolchain's programs read: a bin
// directory's parent is bound whole only when it holds nothing else, otherwise only its
// bin, so that a directory that merely has a bin among other things (/tmp/trial holding
// bin/, priv/, proj/; ~/work holding bin/, etc/, share/, projects/) shows only that.
func prefixLayout(name string) bool {
	switch name {
	case "bin", "sbin", "lib", "lib32", "lib64", "libx32", "libexec", "share", "include", "etc", "man":
		return true
	}
	return false
}

// prefixDocs are the top-level files an unpacked toolchain release carries (node's
// LICENSE, README.md, CHANGELOG.md): no reason to split a prefix.
var prefixDocs = []string{"LICENSE", "README", "CHANGELOG", "COPYING", "NOTICE", "AUTHORS"}

// maxPrefixEntries bounds how many entries of a bin directory's parent are read.
const maxPrefixEntries = 256

// knownRoot is what of dir to bind when it is a toolchain root whatever else it holds;
// nil when it is none. A version of a version manager on the caller's PATH (pyenv's
// versions/V) is bound whole; the others by their layout only, so that a project that
// holds a root's markers besides its own files shows no more than the layout:
//   - a Go root (the go command finds GOROOT as its executable's parent's parent and
//     reads src/, pkg/tool, go.env): bin/go, src/runtime/ and pkg/tool/ with VERSION or
//     go.env; its release directories and those two files;
//   - a venv (venv(8): pyvenv.cfg beside bin/python): bin/python or bin/python3 and
//     pyvenv.cfg (bin/python may be a link to an interpreter elsewhere, followed on its
//     own); prefixLayout's directories and pyvenv.cfg;
//   - a conda prefix: conda-meta/history and bin/; prefixLayout's directories and
//     condaDirs.
func (tr *tcResolver) knownRoot(dir string) []string {
	if tr.versionDir(dir) == dir {
		return []string{dir}
	}
	has := func(rel string) bool { return isFile(filepath.Join(dir, rel)) }
	hasDir := func(rel string) bool { return isDir(filepath.Join(dir, rel)) }
	var dirs, files []string
	switch {
	case has("bin/go") && hasDir("src/runtime") && hasDir("pkg/tool") && (has("VERSION") || has("go.env")):
		dirs, files = goRootDirs, []string{"VERSION", "go.env"}
	case has("pyvenv.cfg") && (exists(filepath.Join(dir, "bin/python")) || exists(filepath.Join(dir, "bin/python3"))):
		dirs, files = layoutNames, []string{"pyvenv.cfg"}
	case has("conda-meta/history") && hasDir("bin"):
		dirs = append(slices.Clone(layoutNames), condaDirs...)
	default:
		return nil
	}
	var parts []string
	for _, n := range dirs {
		if fi, err := tr.r.lstat(filepath.Join(dir, n)); err == nil && fi.IsDir() {
			parts = append(parts, filepath.Join(dir, n))
		}
	}
	for _, n := range files {
		if has(n) {
			parts = append(parts, filepath.Join(dir, n))
		}
	}
	return parts
}

// exists: p is there (a symlink not followed).
func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// layoutNames are prefixLayout's entries, in the order they are bound.
var layoutNames = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32", "libexec", "share", "include", "etc", "man"}

// goRootDirs are the directories of a Go release (go1.x.linux-amd64.tar.gz's go/).
var goRootDirs = []string{"api", "bin", "doc", "lib", "misc", "pkg", "src", "test"}

// condaDirs are a conda prefix's directories besides prefixLayout's (its package
// records, certificates, cross-compiler sysroots and Qt's).
var condaDirs = []string{"conda-meta", "ssl", "compiler_compat", "x86_64-conda-linux-gnu", "x86_64-conda_cos6-linux-gnu",
	"aarch64-conda-linux-gnu", "mkspecs", "plugins", "translations", "qml", "phrasebooks", "resources", "var"}

// prefixParts is what of prefix (a bin directory's parent) to bind: a known root's parts
// (knownRoot); prefix itself when it holds only prefixLayout entries and release
// documents; else its bin directory only, never its other entries (not etc/ or share/
// by name: the parent is no installation prefix).
func (tr *tcResolver) prefixParts(prefix string) []string {
	if parts := tr.knownRoot(prefix); parts != nil {
		return parts
	}
	f, err := os.Open(prefix)
	if err != nil {
		return []string{filepath.Join(prefix, "bin")}
	}
	names, err := f.Readdirnames(maxPrefixEntries + 1)
	f.Close()
	if err != nil || len(names) > maxPrefixEntries {
		names = nil // unreadable or huge: not a prefix to judge, its layout only
	}
	whole := names != nil
	for _, n := range names {
		if !prefixLayout(n) && !isDoc(prefix, n) {
			whole = false
		}
	}
	if whole {
		return []string{prefix}
	}
	// Not a prefix: a project or dotfiles directory whose etc/, share/, lib/ are its own
	// config and data, unrelated to the programs on PATH (from an attack review, review12
	// F3); what those programs link to is followed on its own.
	return []string{filepath.Join(prefix, "bin")}
}

// isDoc: name in dir is a regular file named as a release's documents are: one of
// prefixDocs, bare or with .md or .txt, in any case (README.md, License.txt); not any
// name that starts so (README.ssh-key).
func isDoc(dir, name string) bool {
	u := strings.ToUpper(name)
	for _, d := range prefixDocs {
		if u == d || u == d+".MD" || u == d+".TXT" {
			fi, err := os.Lstat(filepath.Join(dir, name))
			return err == nil && fi.Mode().IsRegular()
		}
	}
	return false
}
