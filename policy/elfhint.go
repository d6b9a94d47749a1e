package policy

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// maxELFHint bounds the size of a file elfDeps reads (a file in the workspace is the
// command's choice).
const maxELFHint = 256 << 20

// elfDeps reads the ELF file p (canonical, opened as openNoLinks does, so that a link
// swapped in since is not followed onto a device): the interpreter its PT_INTERP
// names (the dynamic loader, "" for a static executable) and the shared libraries its
// DT_NEEDED entries name (elf(5)). ok is false for a file that is not ELF.
func elfDeps(p string) (interp string, needed []string, ok bool) {
	fd, size, ok := openNoLinks(p)
	if !ok {
		return "", nil, false
	}
	if size > maxELFHint {
		unix.Close(fd)
		return "", nil, false
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	return readELFDeps(f, size)
}

// libDirs are the directories the dynamic loader searches by default (ld.so(8): the
// multiarch directories of ld.so.cache on Debian, then /lib64 and /lib), as a program
// names them: only these are named in a hint, so that what a file in the workspace
// says cannot make the hint tell whether any other host path exists.
func libDirs() []string {
	var triplet string
	switch runtime.GOARCH {
	case "amd64":
		triplet = "x86_64-linux-gnu"
	case "arm64":
		triplet = "aarch64-linux-gnu"
	}
	var ds []string
	if triplet != "" {
		ds = append(ds, "/lib/"+triplet, "/usr/lib/"+triplet)
	}
	return append(ds, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// loaderHint explains an execve(2) ENOENT of exe, an ELF file the sandbox shows (c the
// host's canonical path, visible the sandbox's visibility): its ELF interpreter or the
// libraries it loads are not there. It names the interpreter and the default library
// directories to bind, as the program names them (--ro /lib64 binds /usr/lib64 and
// makes the /lib64 link on merged-usr), and adds emptyRoot (the policy's missing
// `extends:`) when it is not "". exe is printed as it is (the caller quotes it: Shown);
// every path read from the file is quoted. "" when the file is not a dynamic ELF executable, both
// are shown, or what is missing lies outside the default directories.
func loaderHint(r *resolver, spec *config.Config, exe, c string, visible func(string) bool, emptyRoot string) string {
	interp, needed, ok := elfDeps(c)
	if !ok || interp == "" || !filepath.IsAbs(interp) {
		return ""
	}
	std := libDirs()
	var adds, missing, seen []string
	// need adds the directories to bind for p, as written, and where its links lead;
	// false when one lies outside std
	need := func(p string) (bool, bool) {
		var dirs []string
		cur := p
		for range maxLinkHops {
			rd, err := r.evalSymlinks(filepath.Dir(cur))
			if err != nil {
				dirs = append(dirs, filepath.Dir(cur)) // not on the host either: as written
				break
			}
			if missingLink(spec, cur) != "" || !visible(filepath.Join(rd, filepath.Base(cur))) {
				dirs = append(dirs, filepath.Dir(cur))
			}
			fi, err := r.lstat(filepath.Join(rd, filepath.Base(cur)))
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				break
			}
			t, err := r.readlink(filepath.Join(rd, filepath.Base(cur)))
			if err != nil {
				break
			}
			if !filepath.IsAbs(t) {
				t = filepath.Join(rd, t) // the kernel resolves it from the real directory
			}
			cur = filepath.Clean(t)
		}
		for _, d := range dirs {
			if !slices.Contains(std, d) {
				return false, false
			}
		}
		for _, d := range dirs {
			c, err := r.evalSymlinks(d)
			if err != nil {
				c = d
			}
			if !slices.Contains(seen, c) {
				seen = append(seen, c)
				adds = append(adds, "--ro "+Shown(d))
			}
		}
		return len(dirs) > 0, true
	}
	miss, ok := need(interp)
	if !ok {
		return ""
	}
	if miss {
		missing = append(missing, "its ELF interpreter "+Shown(interp))
	}
	var libs []string
	for _, n := range needed {
		if strings.Contains(n, "/") {
			continue
		}
		for _, d := range std {
			p := filepath.Join(d, n)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			if miss, ok := need(p); ok && miss {
				libs = append(libs, n)
			}
			break
		}
	}
	if len(libs) > 0 {
		missing = append(missing, "the libraries it loads ("+strings.Join(shownAll(libs), ", ")+")")
	}
	if len(missing) == 0 {
		return ""
	}
	s := exe + ": not in the sandbox: " + strings.Join(missing, " and ") + ": add " + strings.Join(adds, " ")
	if emptyRoot != "" {
		s += " (" + emptyRoot + ")"
	}
	return s
}

// missingLink is the first directory on the way to p, as written, that is a symbolic
// link on the host and not made inside by spec (merged-usr /bin, /lib64 under a policy
// without the system binds): the kernel finds nothing there inside, though the resolved
// path is shown. "" when there is none.
func missingLink(spec *config.Config, p string) string {
	for d := filepath.Dir(filepath.Clean(p)); d != "/" && d != "."; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		made := false
		for _, l := range spec.Symlinks {
			made = made || l.Path == d
		}
		if !made {
			return d
		}
	}
	return ""
}
