package cleanup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxPackedRefs is the largest packed-refs file, in bytes, read at launch (policy) or
// rewritten after the run (about a million refs); MaxPackedRefLine is its longest line,
// in bytes with the newline (an object id and a ref name; a loose ref's path, PATH_MAX,
// bounds a ref name on every file system git writes one to).
const (
	MaxPackedRefs    = 128 << 20
	MaxPackedRefLine = 4096
)

// NulNameNote ends the Removed line of a packed-refs line the cleanup removed for a
// NUL byte in its name: "<p>: <name before the NUL>" + NulNameNote.
const NulNameNote = " (a line whose name holds a NUL byte after it)"

// asideSuffix is the first name tried for a file moved aside, beside it (moveAside):
// git never reads it there, the user can.
const asideSuffix = ".gosbx-aside"

// removePackedRefs removes from the packed-refs file p (gitrepository-layout(5)) every
// ref under prefix (underPrefix; "" is every ref, inside refs/ or not), and not under
// one of the prefixes skip, whose line is not one of keep (the lines there at launch),
// with the peeled line ("^<oid>") that follows it; a ref that keep names with another
// line gets its keep line back instead (editPacked). It returns "p: <ref>" for each ref
// removed.
func removePackedRefs(p, prefix string, keep, skip []string) (removed, failed []string) {
	// launch is each kept ref's line by name: a ref that existed at launch and was
	// moved gets its launch line back, not deleted (attack review 32 F2: the user's own
	// checked-out branch origin/feature lost its commits)
	kept, launch := map[string]bool{}, map[string]string{}
	for _, k := range keep {
		kept[k] = true
		if _, ref, _ := packedName(k); ref != "" {
			launch[ref] = k
		}
	}
	// each ref is left once: a second line of its name, kept or put back (git's binary
	// search reads either), is removed (attack review 36 F4)
	seen := map[string]bool{}
	guarded := func(ref string) bool {
		return underPrefix(ref, prefix) && !slices.ContainsFunc(skip, func(s string) bool { return strings.HasPrefix(ref, s) })
	}
	// a kept line's peeled line is not in keep: git would trust it (attack review 36 F5)
	notGuarded := func(ref string) bool { return !guarded(ref) }
	return editPacked(p, func(text, ref string) (bool, string, string) {
		if !guarded(ref) {
			return true, "", ""
		}
		first := !seen[ref]
		seen[ref] = true
		switch {
		case !first && launch[ref] != "":
			return false, "", ref + " (a second line of its name)"
		case kept[text]:
			return true, "", ""
		case launch[ref] != "":
			return false, launch[ref], ref + " (put back as at launch)"
		}
		return false, "", ref
	}, notGuarded)
}

// unpeeled returns the packed-refs header line h with its "peeled" and "fully-peeled"
// traits blanked (git splits the traits at each space), as long as h.
func unpeeled(h string) string {
	words := strings.Split(h, " ")
	for i, w := range words {
		if i > 0 && (w == "peeled" || w == "fully-peeled") {
			words[i] = strings.Repeat(" ", len(w))
		}
	}
	return strings.Join(words, " ")
}

// editPacked rewrites the packed-refs file p when edit changes one of its ref lines
// (text: the line without its newline, ref: its name; the header, "#…", and the peeled
// lines, "^<oid>", are not ref lines): edit returns keep, or the text written in its
// place ("" none) and the note "p: <note>" reported. The peeled line after a ref line
// stays only when the line stays and peelOK (nil: any) accepts its ref; where one is
// dropped from a ref line written (a kept line peelOK refuses, a line put in another's
// place), the header's "peeled" and "fully-peeled" traits are blanked (same length),
// by which git would take the ref for one that peels to nothing: git then peels the
// object itself (attack review 36 F5: git trusts every peeled line). The file is
// streamed (one line held at a time) into a file beside itself, renamed over it
// through its directory's descriptor; a symlink or anything but
// a regular file is left to RemoveSpecialUnder. A file over MaxPackedRefs bytes, or with
// a line over MaxPackedRefLine, is not read but moved aside whole to p+".gosbx-aside"
// (fail closed: none of its refs is left where git reads them), reported as "p: moved
// aside to …".
func editPacked(p string, edit func(text, ref string) (keep bool, repl, note string), peelOK func(ref string) bool) (removed, failed []string) {
	dir, err := openDirNoFollow(filepath.Dir(p))
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{p + ": " + err.Error()}
	}
	defer unix.Close(dir)
	name := filepath.Base(p)
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{p + ": " + err.Error()}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, nil
	}
	aside := func(why string) ([]string, []string) {
		did, err := moveAside(dir, name, p)
		if err != nil {
			return nil, []string{p + ": " + why + "; moving it aside: " + err.Error()}
		}
		return []string{p + ": " + did + " (" + why + ")"}, nil
	}
	if st.Size > MaxPackedRefs {
		return aside(fmt.Sprintf("%d bytes, more than gosbx reads (%d)", st.Size, MaxPackedRefs))
	}
	tmp := name + ".gosbx-" + strconv.Itoa(os.Getpid())
	unix.Unlinkat(dir, tmp, 0)
	wfd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, st.Mode&0o666)
	if err != nil {
		return nil, []string{p + ": " + err.Error()}
	}
	w := os.NewFile(uintptr(wfd), tmp)
	discard := func() {
		w.Close()
		unix.Unlinkat(dir, tmp, 0)
	}
	bw := bufio.NewWriter(w)
	// peel says what becomes of a peeled line: kept, dropped with its ref line, or
	// dropped from a ref line written (the header then unpeeled)
	const (
		keepPeel = iota
		dropPeel
		unvouched
	)
	peel, changed, unpeel, header := keepPeel, false, false, ""
	// the file is read only up to the size it had: one the command's background process
	// keeps growing is not followed past it
	r := bufio.NewReaderSize(io.LimitReader(f, st.Size), MaxPackedRefLine)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			discard()
			return aside(fmt.Sprintf("a line longer than %d bytes", MaxPackedRefLine))
		}
		if len(line) > 0 {
			text := strings.TrimRight(string(line), "\n")
			_, ref, nul := packedName(text)
			switch {
			case strings.HasPrefix(text, "^"):
				// the peeled value of the ref before
				if peel == unvouched {
					changed, unpeel = true, true
				}
				if peel != keepPeel {
					line = nil
				}
			case strings.HasPrefix(text, "#") || ref == "":
				// the header (git refuses a file with any other such line)
				if header == "" && strings.HasPrefix(text, "# pack-refs with:") {
					header = text
				}
				peel = keepPeel
			case nul:
				// a second name for ref in git's listing, never found by its lookup: no
				// git writes one, none is kept (attack review 39 F2)
				changed, peel, line = true, dropPeel, nil
				removed = report(removed, p+": "+ref+NulNameNote)
			default:
				keep, repl, note := edit(text, ref)
				switch {
				case keep && (peelOK == nil || peelOK(ref)):
					peel = keepPeel
				case keep:
					peel = unvouched
				case repl != "":
					changed, peel, line = true, unvouched, []byte(repl+"\n")
					removed = report(removed, p+": "+note)
				default:
					changed, peel, line = true, dropPeel, nil
					removed = report(removed, p+": "+note)
				}
			}
			bw.Write(line)
		}
		if err != nil {
			if err != io.EOF {
				discard()
				return nil, []string{p + ": " + err.Error()}
			}
			break
		}
	}
	if !changed {
		discard()
		return nil, nil
	}
	unix.Fchown(wfd, int(st.Uid), int(st.Gid)) // as it was; a caller who may not keeps it its own
	err = bw.Flush()
	if err == nil && unpeel && header != "" {
		_, err = w.WriteAt([]byte(unpeeled(header)), 0)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return nil, []string{p + ": " + err.Error()}
	}
	return removed, nil
}

// underPrefix reports whether ref lies under prefix: prefix "" or ending in "/" starts it;
// any other prefix (refs/heads/origin) is ref itself or starts it followed by "/", the
// names git's lookup could take for <remote>/<x> (attack review 32 F2: a remote "origin"
// took the user's refs/heads/origin-fix).
func underPrefix(ref, prefix string) bool {
	if prefix == "" || strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(ref, prefix)
	}
	return ref == prefix || strings.HasPrefix(ref, prefix+"/")
}

// PackedRefLines returns the lines ("<oid> <ref>", in file order) of the packed-refs
// file p whose ref keep accepts, none when p is missing. p is read as the after-run
// cleanup reads it: opened without following a symlink or blocking on a FIFO, a
// regular file of at most MaxPackedRefs bytes with lines of at most MaxPackedRefLine
// (git's peeled "^" lines have no ref and are never kept). Errors: the open's, p not
// a regular file or over the bounds, more than max lines kept.
func PackedRefLines(p string, max int, keep func(ref string) bool) ([]string, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	if st.Size > MaxPackedRefs {
		return nil, fmt.Errorf("%s: %d bytes, more than gosbx reads (%d)", p, st.Size, MaxPackedRefs)
	}
	var out []string
	sc := bufio.NewScanner(io.LimitReader(f, st.Size))
	sc.Buffer(nil, MaxPackedRefLine)
	for sc.Scan() {
		_, ref, nul := packedName(sc.Text())
		if nul {
			return nil, fmt.Errorf("%s: %s: %w", p, ref, ErrNulName)
		}
		if ref != "" && keep(ref) {
			if out = append(out, sc.Text()); len(out) > max {
				return nil, fmt.Errorf("%s: more than %d refs to keep", p, max)
			}
		}
	}
	return out, sc.Err()
}
