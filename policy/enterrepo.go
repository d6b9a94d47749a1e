package policy

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// How git 2.39 finds the repository of a local remote's path (path.c enter_repo, not
// strict, as upload-pack and receive-pack call it; setup.c is_git_directory,
// validate_headref, read_gitfile).

// enterRepoSuffixes are what enter_repo appends to the path, tried in this order: the
// first that stat(2) finds a regular file (a .git file, or what git then refuses) or a
// git directory is the repository.
var enterRepoSuffixes = []string{"/.git", "", ".git/.git", ".git"}

// enterRepoCandidates are the paths enter_repo tries for the local remote path p
// (trailing slashes dropped, "~" already expanded by the caller), in its order.
func enterRepoCandidates(p string) []string {
	for len(p) > 1 && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	out := make([]string, len(enterRepoSuffixes))
	for i, s := range enterRepoSuffixes {
		out[i] = p + s
	}
	return out
}

// enterRepoTakes reports whether enter_repo stops at the candidate c whose stat(2) is
// st: a regular file, or a directory that is a git directory (isGitDirectory).
func enterRepoTakes(c string, st os.FileInfo) bool {
	return st.Mode().IsRegular() || st.IsDir() && isGitDirectory(c)
}

// isGitDirectory is setup.c is_git_directory: HEAD valid (validHeadRef), and objects/
// and refs/ searchable (access(2) X_OK) in the common dir (commondir's, or d).
func isGitDirectory(d string) bool {
	if !validHeadRef(filepath.Join(d, "HEAD")) {
		return false
	}
	c := d
	if b, err := readGitFile(filepath.Join(d, "commondir")); err == nil && b != nil {
		c = strings.TrimRight(string(b), "\n\r\t ")
		if !filepath.IsAbs(c) {
			c = filepath.Join(d, c)
		}
	}
	for _, s := range []string{"objects", "refs"} {
		if unix.Access(filepath.Join(c, s), unix.X_OK) != nil {
			return false
		}
	}
	return true
}

// validHeadRef is setup.c validate_headref: a symlink whose text starts "refs/", or a
// file that starts "ref:" then (after blanks) "refs/", or with 40 hex digits (the
// SHA-1 object name git assumes before it reads the repository's format). Only a
// regular file is read (a FIFO would block; git fails to read anything else).
func validHeadRef(p string) bool {
	st, err := os.Lstat(p)
	if err != nil {
		return false
	}
	if st.Mode()&os.ModeSymlink != 0 {
		t, err := os.Readlink(p)
		return err == nil && strings.HasPrefix(t, "refs/")
	}
	if !st.Mode().IsRegular() {
		return false
	}
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 255)
	n, _ := io.ReadFull(f, b)
	b = b[:n]
	if r, ok := bytes.CutPrefix(b, []byte("ref:")); ok {
		if bytes.HasPrefix(bytes.TrimLeft(r, " \t\n\r"), []byte("refs/")) {
			return true
		}
	}
	if len(b) < 40 {
		return false
	}
	for _, c := range b[:40] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// gitfileTarget is setup.c read_gitfile on the regular file f: the path after
// "gitdir: " (trailing whitespace dropped; a relative one from f's directory), and
// whether f holds one (git refuses any other file it takes as a repository). Errors are
// *Error: f is larger than 4 KiB or unreadable.
func gitfileTarget(f string) (string, bool, error) {
	b, err := readGitFile(f)
	if err != nil || b == nil {
		return "", false, err
	}
	rest, ok := strings.CutPrefix(string(b), "gitdir: ")
	if !ok {
		return "", false, nil
	}
	rest = strings.TrimRight(rest, "\n\r\t ")
	if rest == "" {
		return "", false, nil
	}
	if !filepath.IsAbs(rest) {
		rest = filepath.Join(filepath.Dir(f), rest)
	}
	return rest, true, nil
}

// enterRepo is the git dir git's local transport uses for the path p, "" when it
// finds none (the resolution guardLocalRemote guards; its tests hold it to git's).
func enterRepo(p string) string {
	for _, c := range enterRepoCandidates(p) {
		st, err := os.Stat(c)
		if err != nil || !enterRepoTakes(c, st) {
			continue
		}
		if st.Mode().IsRegular() {
			t, ok, err := gitfileTarget(c)
			if err != nil || !ok {
				return ""
			}
			c = t
		}
		if !isGitDirectory(c) {
			return ""
		}
		return c
	}
	return ""
}
