package policy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSubmoduleDepth bounds the recursion into nested submodules.
const maxSubmoduleDepth = 8

// guardSubmodulePaths makes every submodule path of the worktree (a gitlink of the
// index of the git dir gd, or a path of .gitmodules) unchangeable for the command: git
// recurses into a populated submodule from the parent repository's git status, and would
// run the config (core.fsmonitor, …) of a repository the command made there. A path
// without a .git (not checked out) is bound read-only onto itself, empty as git left it
// (created when missing), so nothing can be made in it and it cannot be replaced (a
// mount point); a checked-out one has its .git re-bound read-only and its own submodule
// paths guarded the same way (nested submodules, however deep). A submodule path that is
// a symlink, or an index or .gitmodules that cannot be read as git would, is refused.
func (plan *gitPlan) guardSubmodulePaths(worktree, gd string, inWritable func(string) bool, depth int) error {
	if depth > maxSubmoduleDepth {
		return errorf("protected", worktree, nil, "submodules nested more than %d deep", maxSubmoduleDepth)
	}
	links, err := plan.reads.gitlinks(gd)
	if err != nil {
		return errorf("protected", filepath.Join(gd, "index"), err, "cannot read the repository's index to find its submodules (read the same way git does); fix it with git, or remove the repository from the workspace")
	}
	mods, err := gitmodulesPaths(worktree, plan.reads.budget())
	if err != nil {
		return errorf("protected", filepath.Join(worktree, ".gitmodules"), err, "cannot read .gitmodules")
	}
	seen := map[string]bool{}
	for _, rel := range append(links, mods...) {
		rel = filepath.Clean(rel)
		if seen[rel] || rel == "." || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		seen[rel] = true
		dir := filepath.Join(worktree, rel)
		if !inWritable(dir) {
			continue
		}
		for d := worktree; d != dir; {
			next := filepath.Join(d, strings.Split(strings.TrimPrefix(dir, d+"/"), "/")[0])
			if st, err := os.Lstat(next); err == nil && st.Mode()&os.ModeSymlink != 0 {
				return errorf("protected", next, nil, "a component of the submodule path %s is a symlink: git would follow it from the repository's git status; remove it", rel)
			}
			d = next
		}
		st, err := os.Lstat(dir)
		switch {
		case os.IsNotExist(err):
			plan.makeDirs = append(plan.makeDirs, dir)
			plan.readOnly = append(plan.readOnly, dir)
			continue
		case err != nil:
			return errorf("protected", dir, err, "cannot check the submodule path")
		case !st.IsDir():
			continue // a file: git does not recurse into it
		}
		dotgit := filepath.Join(dir, ".git")
		gst, err := os.Lstat(dotgit)
		if err != nil {
			plan.readOnly = append(plan.readOnly, dir)
			continue
		}
		plan.readOnly = append(plan.readOnly, dotgit)
		sub := dotgit
		if !gst.IsDir() {
			if sub, err = gitdirOf(dotgit); err != nil {
				return err
			}
			if sub == "" || !gitDirLike(sub) {
				continue // git would not take it as a repository either
			}
			if err := plan.guardNamedGitDir(sub, gd); err != nil {
				return err
			}
		}
		// what its config names, its local remotes among them (taken from dir): the
		// host's git runs there too (attack review 30 F6)
		if err := plan.guardGitDirSettings(dir, sub, inWritable); err != nil {
			return err
		}
		if err := plan.guardSubmodulePaths(dir, sub, inWritable, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// gitmodulesPaths reads the submodule paths of the worktree's .gitmodules as git's
// config parser reads this key: "path" in any case, on its own line or after a section
// header (whose quoted subsection may hold "]"), its value with quotes removed wherever
// they are, backslash escapes, and a ; or # comment outside quotes.
func gitmodulesPaths(worktree string, rb *readBudget) ([]string, error) {
	b, err := rb.readRegular(filepath.Join(worktree, ".gitmodules"), 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(string(b), "\\\n", ""), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			quoted, end := false, -1
			for i := 1; i < len(line) && end < 0; i++ {
				switch {
				case line[i] == '\\' && quoted:
					i++
				case line[i] == '"':
					quoted = !quoted
				case line[i] == ']' && !quoted:
					end = i
				}
			}
			if end < 0 {
				continue
			}
			line = strings.TrimSpace(line[end+1:])
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "path") {
			continue
		}
		if p := configValue(v); p != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// configValue is a git config value as git reads it (config.c parse_value).
func configValue(v string) string {
	var b strings.Builder
	quoted, space := false, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case !quoted && (c == ';' || c == '#'):
			i = len(v)
			continue
		case !quoted && (c == ' ' || c == '\t'):
			if b.Len() > 0 {
				space++
			}
			continue
		}
		for ; space > 0; space-- {
			b.WriteByte(' ')
		}
		switch c {
		case '"':
			quoted = !quoted
		case '\\':
			if i+1 < len(v) {
				i++
				switch v[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'b':
					b.WriteByte('\b')
				default:
					b.WriteByte(v[i])
				}
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// gitlinks lists the paths of the index of the git dir gd that are gitlinks (mode
// 160000: submodules), as git reads it (gitformat-index(5)): versions 2 to 4, SHA-1 or
// SHA-256 object names (extensions.objectFormat of the repository's config), names of
// the length the entry's flags give, and a split index's shared index (the "link"
// extension) as well. An index git would refuse, or one this reader cannot follow to
// its end, is an error: a gitlink must not hide in what is skipped.
func gitlinks(gd string) ([]string, error) { return (*gitReads)(nil).gitlinks(gd) }

// gitlinks is gitlinks, with g's reads.
func (g *gitReads) gitlinks(gd string) ([]string, error) {
	hashLen := 20
	format, err := g.objectFormat(gd)
	if err != nil {
		return nil, err
	}
	if format == "sha256" {
		hashLen = 32
	}
	out, shared, err := readIndex(filepath.Join(gd, "index"), hashLen, g.budget())
	if err != nil || shared == "" {
		return out, err
	}
	more, _, err := readIndex(filepath.Join(gd, "sharedindex."+shared), hashLen, g.budget())
	return append(out, more...), err
}

// objectFormat is extensions.objectFormat of the repository whose git dir is gd (its
// common dir's config for a linked worktree).
func (g *gitReads) objectFormat(gd string) (string, error) {
	c, err := g.commondirOf(gd)
	if err != nil {
		return "", err
	}
	if c != "" {
		gd = c
	}
	b, err := g.config(filepath.Join(gd, "config"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	entries, ok := parseGitConfig(string(b))
	if !ok {
		return "", fmt.Errorf("%s: does not parse as git config (git refuses it too)", filepath.Join(gd, "config"))
	}
	return strings.ToLower(configLast(entries, "extensions", "objectformat")), nil
}

// maxIndexFile bounds one index file's size (bytes); the launch's read budget bounds
// what is read of all of them together.
const maxIndexFile = 512 << 20

// maxIndexName bounds one path name in an index (git's own are at most PATH_MAX on
// checkout; the bound keeps a name without a NUL from being held whole).
const maxIndexName = 64 << 10

// readIndex reads one index file (gitformat-index(5)), streamed through a 64 KiB
// buffer (never held whole) and charged to rb: its gitlinks, and the name (hex) of the
// shared index of a split index, if any. A missing file has none. An index whose
// header counts more entries than its size can hold, or with an extension git would
// refuse (a signature that is not an optional, upper-case one or a known lower-case
// one), is an error before more is read: a sparse file of zeros planted as an index
// costs nothing.
func readIndex(p string, hashLen int, rb *readBudget) (links []string, shared string, err error) {
	fd, st, err := openRegular(p, maxIndexFile, unix.O_NOFOLLOW)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	bad := func(what string) ([]string, string, error) {
		return nil, "", fmt.Errorf("%s: %s", p, what)
	}
	end := st.Size - int64(hashLen) // the trailing checksum
	if end < 12 {
		return bad("not an index")
	}
	r := &indexReader{br: bufio.NewReaderSize(f, 64<<10), p: p, rb: rb, left: end}
	hdr, err := r.next(12)
	if err != nil {
		return nil, "", err
	}
	if string(hdr[:4]) != "DIRC" {
		return bad("not an index")
	}
	ver := binary.BigEndian.Uint32(hdr[4:8])
	n := binary.BigEndian.Uint32(hdr[8:12])
	if ver < 2 || ver > 4 {
		return bad(fmt.Sprintf("index version %d", ver))
	}
	// the least an entry takes: its fixed part, a name of one byte and its NUL (or a
	// version 4 prefix varint and a NUL)
	if minEntry := int64(40 + hashLen + 4); int64(n) > (end-12)/minEntry {
		return bad(fmt.Sprintf("its header counts %d entries, more than its %d bytes can hold", n, st.Size))
	}
	fixed := 40 + hashLen + 2
	prev := ""
	for i := uint32(0); i < n; i++ {
		e, err := r.next(fixed)
		if err != nil {
			return nil, "", err
		}
		mode := binary.BigEndian.Uint32(e[24:28])
		flags := binary.BigEndian.Uint16(e[fixed-2 : fixed])
		size := fixed
		if flags&0x4000 != 0 {
			if ver < 3 {
				return bad("extended flags in a version 2 index")
			}
			if _, err := r.next(2); err != nil {
				return nil, "", err
			}
			size += 2
		}
		var name string
		if ver == 4 {
			strip, err := r.varint()
			if err != nil || strip > uint64(len(prev)) {
				return bad("a bad name prefix")
			}
			rest, err := r.upToNUL()
			if err != nil {
				return nil, "", err
			}
			name = prev[:len(prev)-int(strip)] + rest
		} else {
			l := int(flags & 0xfff)
			if l == 0xfff { // longer names: up to the NUL, which is part of the padding
				rest, err := r.peekUpToNUL()
				if err != nil {
					return nil, "", err
				}
				l = len(rest)
			}
			b, err := r.next(l)
			if err != nil {
				return nil, "", err
			}
			if mode == 0o160000 {
				name = string(b) // only a gitlink's name is kept (prev is version 4's)
			}
			// entries are padded with NULs to a multiple of 8 bytes (at least one)
			if err := r.skip(int64((size+l+8)&^7 - size - l)); err != nil {
				return nil, "", err
			}
		}
		prev = name
		if mode == 0o160000 {
			links = append(links, name)
		}
	}
	for r.left > 0 {
		h, err := r.next(8)
		if err != nil {
			return bad("an extension runs past the end")
		}
		sig := string(h[:4])
		size := int64(binary.BigEndian.Uint32(h[4:8]))
		if size > r.left {
			return bad(fmt.Sprintf("extension %q runs past the end", sig))
		}
		switch {
		case sig == "link":
			if size < int64(hashLen) {
				return bad("a short link extension")
			}
			b, err := r.next(hashLen)
			if err != nil {
				return nil, "", err
			}
			shared = hex.EncodeToString(b)
			size -= int64(hashLen)
		case sig == "sdir":
		case sig[0] >= 'a' && sig[0] <= 'z':
			return bad("the mandatory extension " + sig + " is not known here")
		case sig[0] < 'A' || sig[0] > 'Z':
			return bad(fmt.Sprintf("extension %q is not one git writes (git refuses such an index)", sig))
		}
		if err := r.skip(size); err != nil {
			return nil, "", err
		}
	}
	return links, shared, nil
}

// indexReader reads an index up to its checksum (left bytes), every byte charged to
// a launch's read budget.
type indexReader struct {
	br   *bufio.Reader
	p    string
	rb   *readBudget
	left int64
}

var errIndexEnd = errors.New("runs past the end")

func (r *indexReader) take(n int64) error {
	if n > r.left {
		return fmt.Errorf("%s: an entry %w", r.p, errIndexEnd)
	}
	r.left -= n
	return r.rb.charge(r.p, n)
}

// next returns the next n bytes (valid until the next call; n at most 64 KiB).
func (r *indexReader) next(n int) ([]byte, error) {
	if err := r.take(int64(n)); err != nil {
		return nil, err
	}
	b, err := r.br.Peek(n)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.p, err)
	}
	r.br.Discard(n)
	return b, nil
}

// skip reads past n bytes.
func (r *indexReader) skip(n int64) error {
	if err := r.take(n); err != nil {
		return err
	}
	if _, err := r.br.Discard(int(n)); err != nil {
		return fmt.Errorf("read %s: %w", r.p, err)
	}
	return nil
}

// peekUpToNUL returns the bytes before the next NUL without reading past them.
func (r *indexReader) peekUpToNUL() (string, error) {
	for k := 64; ; k *= 2 {
		b, err := r.br.Peek(int(min(int64(k), r.left, int64(r.br.Size()))))
		if i := bytes.IndexByte(b, 0); i >= 0 {
			return string(b[:i]), nil
		}
		if len(b) >= r.br.Size() || int64(len(b)) >= r.left || len(b) >= maxIndexName {
			return "", fmt.Errorf("%s: a name without its NUL (or longer than %d bytes)", r.p, maxIndexName)
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", r.p, err)
		}
	}
}

// upToNUL reads a name and its NUL.
func (r *indexReader) upToNUL() (string, error) {
	s, err := r.peekUpToNUL()
	if err != nil {
		return "", err
	}
	if err := r.skip(int64(len(s)) + 1); err != nil {
		return "", err
	}
	return s, nil
}

// varint reads git's offset varint (index version 4).
func (r *indexReader) varint() (uint64, error) {
	b, _ := r.br.Peek(int(min(10, r.left)))
	v, k := indexVarint(b)
	if k == 0 {
		return 0, errors.New("bad varint")
	}
	return v, r.skip(int64(k))
}

// indexVarint decodes git's offset varint (index version 4).
func indexVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 127)
	i := 1
	for c&128 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		c = b[i]
		i++
		v = ((v + 1) << 7) | uint64(c&127)
	}
	return v, i
}
