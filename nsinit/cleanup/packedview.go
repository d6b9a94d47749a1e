package cleanup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// packedRec is a ref's first line in a packed-refs file as git reads it: its object
// id and its peel as git takes it: "^<oid>" (the peeled line after it), "-" (no peeled
// line where the header says git knows every such ref's peel: it peels to nothing) or
// "" (git peels the object itself); lines is how many lines name the ref.
type packedRec struct {
	oid, peel string
	lines     int
	// nul: a line of the ref's name as git reads it holds more after a NUL byte
	// (packedName): git lists it under that name, yet its lookup never finds it
	nul bool
}

// packedName splits a packed-refs ref line (no newline) as git 2.39's packed backend
// does: the object id up to the first space, tab or CR (git takes one byte its isspace
// accepts after the id), the rest the name, which git uses as a C string: cut at the
// first NUL byte.
// nul reports whether the line held more after that NUL: git then lists the ref under
// the cut name (for-each-ref, push --tags) while its lookup, which compares the whole
// line, does not find it (attack review 39 F2). ref is "" for a line with no separator.
func packedName(text string) (oid, ref string, nul bool) {
	i := strings.IndexAny(text, " \t\r")
	if i < 0 {
		return text, "", false
	}
	oid, ref = text[:i], text[i+1:]
	if j := strings.IndexByte(ref, 0); j >= 0 {
		return oid, ref[:j], true
	}
	return oid, ref, false
}

// PackedLineName is the name git reads from the packed-refs ref line text (packedName;
// "" for a line with none).
func PackedLineName(text string) string {
	_, ref, _ := packedName(text)
	return ref
}

// ErrNulName is wrapped by RefValues' and PackedRefLines' error for a packed-refs line
// whose name holds a NUL byte (packedName): no git writes one.
var ErrNulName = errors.New("a packed-refs line whose name holds a NUL byte: git lists it under the name before the NUL, a second line of that name, yet never finds it by that name (no git writes one: delete the line)")

// ErrTooManyRefs is wrapped by RefValues' error for more refs than its max.
var ErrTooManyRefs = errors.New("more refs than gosbx keeps as at launch")

// packedView is what git's packed-refs backend (git 2.39 refs/packed-backend.c) reads
// from a packed-refs file for the refs a caller wants. git trusts a "sorted" header and
// binary-searches the file: with a ref on two lines it reads either (and for-each-ref
// lists both), and with lines out of order it may miss a ref. The cleanup reads the
// file through this view only, so that it never takes a ref for "as at launch" where
// git reads another value (attack review 36 F4, F5).
type packedView struct {
	// recs are the wanted refs' first lines, by name.
	recs map[string]packedRec
	// blind: the header says "sorted" and a ref line sorts before the one before
	// (byte order, as git's): git's lookup of any ref in it is then not known. (A
	// ref on two lines in a row is in recs twice.)
	blind bool
}

// readPackedView reads the packed-refs file p as the after-run cleanup reads it (opened
// without following a symlink or blocking on a FIFO, a regular file of at most
// MaxPackedRefs bytes with lines of at most MaxPackedRefLine) and returns the lines of
// the refs want accepts; an empty view when p is missing. Errors: the open's, p not a
// regular file or over the bounds, more than max lines wanted.
func readPackedView(p string, max int, want func(ref string) bool) (packedView, error) {
	v := packedView{recs: map[string]packedRec{}}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return v, nil
	}
	if err != nil {
		return v, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return v, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return v, fmt.Errorf("%s: not a regular file", p)
	}
	if st.Size > MaxPackedRefs {
		return v, fmt.Errorf("%s: %d bytes, more than gosbx reads (%d)", p, st.Size, MaxPackedRefs)
	}
	sorted, peelAll, peelTags := false, false, false
	prev, last, n := "", "", 0
	r := bufio.NewReaderSize(io.LimitReader(f, st.Size), MaxPackedRefLine)
	for first := true; ; first = false {
		line, rerr := r.ReadSlice('\n')
		if errors.Is(rerr, bufio.ErrBufferFull) {
			return v, fmt.Errorf("%s: a line longer than %d bytes", p, MaxPackedRefLine)
		}
		text := strings.TrimRight(string(line), "\n")
		switch {
		case first && strings.HasPrefix(text, "# pack-refs with:"):
			traits := strings.Fields(strings.TrimPrefix(text, "# pack-refs with:"))
			sorted, peelAll, peelTags = slices.Contains(traits, "sorted"), slices.Contains(traits, "fully-peeled"), slices.Contains(traits, "peeled")
		case strings.HasPrefix(text, "^"):
			if rec, ok := v.recs[last]; ok && last != "" && rec.lines == 1 {
				rec.peel = text
				v.recs[last] = rec
			}
			last = ""
		case text != "":
			oid, ref, nul := packedName(text)
			if ref == "" {
				break // git refuses the file
			}
			if ref < prev {
				v.blind = true // kept only with a "sorted" header, below
			}
			prev, last = ref, ""
			if !want(ref) {
				break
			}
			if n++; n > max {
				return v, fmt.Errorf("%s: more than %d refs to compare: %w", p, max, ErrTooManyRefs)
			}
			peel := ""
			if peelAll || peelTags && strings.HasPrefix(ref, "refs/tags/") {
				peel = "-"
			}
			if rec, ok := v.recs[ref]; ok {
				rec.lines++
				rec.nul = rec.nul || nul
				v.recs[ref] = rec
				break
			}
			v.recs[ref], last = packedRec{oid: oid, peel: peel, lines: 1, nul: nul}, ref
		}
		if rerr != nil {
			if rerr != io.EOF {
				return v, rerr
			}
			break
		}
	}
	v.blind = v.blind && sorted
	return v, nil
}

// RefValues returns the refs under dir (a git dir's refs/tags) as RestoreRefs' Keep, as
// git resolves them now: a loose ref "<path from dir>\x00<value>" (git reads it first
// and peels its object), else the line of the git dir's packed-refs (dir's grandparent)
// "<path>\x00<oid>", with "\x00<peel>" appended when git takes its peel from the file
// (packedRec: "^<oid>" or "-"). At most max refs. Errors: LooseRefs', the packed-refs
// file's (readPackedView), and a packed-refs git may read otherwise than this: a ref
// under dir on two lines, or lines out of order under a "sorted" header.
func RefValues(dir string, max int) ([]string, error) {
	loose, err := LooseRefs(dir, max)
	if err != nil {
		return nil, err
	}
	prefix := "refs/" + filepath.Base(dir) + "/"
	p := packedRefsOf(dir)
	view, err := readPackedView(p, max, func(ref string) bool { return strings.HasPrefix(ref, prefix) })
	if err != nil {
		return nil, err
	}
	for ref, rec := range view.recs {
		if rec.nul {
			return nil, fmt.Errorf("%s: %s: %w", p, ref, ErrNulName)
		}
		if rec.lines > 1 {
			return nil, fmt.Errorf("%s: %s is on %d lines: git may read any of them", p, ref, rec.lines)
		}
	}
	if view.blind {
		return nil, fmt.Errorf("%s: its lines are out of order under a \"sorted\" header: git may not find a ref in it", p)
	}
	at := map[string]string{}
	for ref, rec := range view.recs {
		v := rec.oid
		if rec.peel != "" {
			v += "\x00" + rec.peel
		}
		at[strings.TrimPrefix(ref, prefix)] = v
	}
	for _, l := range loose {
		rel, content, _ := strings.Cut(l, "\x00")
		if content = strings.TrimSpace(content); strings.ContainsRune(content, 0) {
			content = "" // no value git reads: not kept
		}
		at[rel] = content
	}
	var keep []string
	for rel, v := range at {
		if value, _, _ := strings.Cut(v, "\x00"); value != "" && !strings.ContainsAny(value, "\n") {
			keep = append(keep, rel+"\x00"+v)
		}
	}
	if len(keep) > max {
		return nil, fmt.Errorf("%s: more than %d refs: %w", dir, max, ErrTooManyRefs)
	}
	slices.Sort(keep)
	return keep, nil
}

// packedRefsOf is the packed-refs file of the git dir whose refs/<x> is dir.
func packedRefsOf(dir string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(dir)), "packed-refs")
}
