package policy

import (
	"os"
	"path/filepath"
	"strings"
)

// prefixLayout are the entries of an installation prefix (GNU coding standards'
// directory variables, hier(7)'s /usr/local) a toolchain's programs read: a bin
// directory's parent is bound whole only when it holds nothing else, otherwise these
// are bound one by one, so that a directory that merely has a bin among other things
// (/tmp/trial holding bin/, priv/, proj/) shows only its prefix's part.
var prefixLayout = map[string]bool{
	"bin": true, "sbin": true, "lib": true, "lib32": true, "lib64": true, "libx32": true, "libexec": true,
	"share": true, "include": true, "etc": true, "man": true,
}

// prefixDocs are the top-level files an unpacked toolchain release carries (node's
// LICENSE, README.md, CHANGELOG.md): no reason to split a prefix.
var prefixDocs = []string{"LICENSE", "README", "CHANGELOG", "COPYING", "NOTICE", "AUTHORS"}

// maxPrefixEntries bounds how many entries of a bin directory's parent are read.
const maxPrefixEntries = 256

// knownRoot: dir is a toolchain root bound whole whatever else it holds: a version of
// a version manager on the caller's PATH (pyenv's versions/V), a venv (pyvenv.cfg), a
// Go root (go.env, or VERSION beside src/: the go command finds GOROOT as its
// executable's parent's parent and reads src/, pkg/, go.env), a conda prefix
// (conda-meta/).
func (tr *tcResolver) knownRoot(dir string) bool {
	return tr.versionDir(dir) == dir || isFile(filepath.Join(dir, "pyvenv.cfg")) ||
		isFile(filepath.Join(dir, "go.env")) || (isFile(filepath.Join(dir, "VERSION")) && isDir(filepath.Join(dir, "src"))) ||
		isDir(filepath.Join(dir, "conda-meta"))
}

// prefixParts is what of prefix (a bin directory's parent) to bind: prefix itself when it
// is a known root or holds only prefixLayout entries and release documents; else its
// prefixLayout directories that exist (bin among them), never its other entries.
func (tr *tcResolver) prefixParts(prefix string) []string {
	if tr.knownRoot(prefix) {
		return []string{prefix}
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
		if !prefixLayout[n] && !isDoc(prefix, n) {
			whole = false
		}
	}
	if whole {
		return []string{prefix}
	}
	var parts []string
	for _, n := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32", "libexec", "share", "include", "etc", "man"} {
		if fi, err := tr.r.lstat(filepath.Join(prefix, n)); err == nil && (fi.IsDir() || n == "bin") {
			parts = append(parts, filepath.Join(prefix, n))
		}
	}
	if len(parts) == 0 {
		parts = []string{filepath.Join(prefix, "bin")}
	}
	return parts
}

// isDoc: name in dir is a regular file named as a release's documents are.
func isDoc(dir, name string) bool {
	for _, d := range prefixDocs {
		if strings.HasPrefix(strings.ToUpper(name), d) {
			fi, err := os.Lstat(filepath.Join(dir, name))
			return err == nil && fi.Mode().IsRegular()
		}
	}
	return false
}
