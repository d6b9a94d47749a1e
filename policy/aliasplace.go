package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A candidate's own place in its file system is judged by the name rule when that file
// system is a system's root (attack review 15 F6): in a container-like mount namespace
// the host's / is often visible only as `mount --bind / /host` (a hostPath /host or
// /hostfs), with no other mount of that disk to give the candidate a refused name.
// The place is then the name that counts: /host is "/" there, /host/etc is "/etc",
// /host/home/u is a home. A file system is a system's root when its top, shown by a
// mount whose root field is "/", holds the directories etc and usr, or when it is the
// device of the mount at our own /. When no mount shows a file system's top and the
// candidate's mount shows a subdirectory of it (root field not "/"), the place is
// judged too: nothing says the file system is not a system's root. Any other file
// system (a data volume mounted whole, a tmpfs) keeps the plain rule: its top may be
// a workspace.

// refusedPlace refuses canon when its place cp lies in a system's root file system and
// the name rule refuses cp.path there (homes: ours, and the directories in that file
// system's /home). Errors are *Error naming canon and the place.
func refusedPlace(field, canon string, cp place, mounts []mountEntry, h Host, creds []string) error {
	top := ""
	for i := range mounts {
		// a top shown and not covered by a later mount on the same point
		if m := &mounts[i]; m.dev == cp.dev && m.root == "/" && holding(mounts, m.point) == m {
			top = m.point
			break
		}
	}
	ours := false
	if r := holding(mounts, "/"); r != nil && r.dev == cp.dev {
		ours = true
	}
	why := ""
	homes := h.Homes
	switch m := holding(mounts, canon); {
	case ours:
		why = "the file system of our own /"
	case top != "" && holdsSystemDirs(top):
		why = fmt.Sprintf("a system's root file system (etc/ and usr/ at its top, shown at %s)", top)
	case top == "" && m != nil && m.root != "/":
		// only a subdirectory of the file system is shown (a hostPath bind of /etc at
		// /hostetc, attack review 16 F4): nothing tells whether it is a system's root,
		// and the place's own name is the one that system gives it, so the name rule
		// judges it (a directory of /home taken as a home, its own /home unseen)
		why = fmt.Sprintf("a file system whose top no mount shows (%s shows its %s)", m.point, m.root)
		if rest, ok := strings.CutPrefix(cp.path, "/home/"); ok {
			homes = append([]string{"/home/" + strings.SplitN(rest, "/", 2)[0]}, homes...)
		}
	default:
		return nil
	}
	if top != "" && under(cp.path, "/home") {
		homes = append(homesIn(filepath.Join(top, "home")), homes...)
	}
	if !ours {
		creds = nil // our credential paths name our system, not that one
	}
	if err := writableName(field, cp.path, Host{Homes: homes}, creds); err != nil {
		other := fmt.Sprintf("%s of device %s", cp.path, cp.dev)
		return aliasError(field, canon, other, fmt.Sprintf("it is %s in %s", other, why), err)
	}
	return nil
}

// holdsSystemDirs is whether dir holds the directories etc and usr (not symlinks).
func holdsSystemDirs(dir string) bool {
	for _, d := range []string{"etc", "usr"} {
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(dir, d), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return false
		}
	}
	return true
}

// homesIn is the directories in dir (a system's /home) as that system names them.
func homesIn(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // no /home there: no homes to add
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, "/home/"+e.Name())
		}
	}
	return out
}
