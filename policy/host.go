package policy

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/gosbx/gosbx/caps"
)

// Host is what Compile needs to know about the caller. CurrentHost reads it; tests
// build their own.
type Host struct {
	UID, GID int
	// Root: a root caller (caps.CurrentCaller): its command runs as a host id of the
	// range (config.RootID). A uid 0 that is not one takes the unprivileged path,
	// uid 0 mapped to itself.
	Root     bool
	Home     string   // the caller's HOME (or passwd home); the sandbox's private HOME lives here
	Homes    []string // every name of the caller's home ($HOME and the passwd entry), canonical
	Cwd      string   // the caller's working directory
	Environ  []string // the caller's environment, KEY=VALUE
	MemTotal int64    // the host's memory in bytes (/proc/meminfo MemTotal); 0: unknown
}

// CurrentHost describes the calling process.
func CurrentHost() (Host, error) {
	h := Host{UID: os.Getuid(), GID: os.Getgid(), Root: caps.CurrentCaller().Root, Environ: os.Environ()}
	cwd, err := os.Getwd()
	if err != nil {
		return h, errorf("workspace", "", err, "cannot read the current directory")
	}
	h.Cwd = cwd
	h.MemTotal = memTotal()
	var names []string
	if v := os.Getenv("HOME"); v != "" {
		names = append(names, v)
	}
	if u, err := user.LookupId(strconv.Itoa(h.UID)); err == nil && u.HomeDir != "" {
		names = append(names, u.HomeDir)
	}
	r := newResolver()
	for _, n := range names {
		if !filepath.IsAbs(n) {
			continue
		}
		if h.Home == "" {
			h.Home = filepath.Clean(n)
		}
		if c, err := r.evalSymlinks(n); err == nil {
			h.Homes = append(h.Homes, c)
		} else {
			h.Homes = append(h.Homes, filepath.Clean(n))
		}
	}
	return h, nil
}

// statOwner returns the uid and gid of a file.
func statOwner(st os.FileInfo) ([2]int, bool) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return [2]int{int(s.Uid), int(s.Gid)}, true
	}
	return [2]int{}, false
}

// homeNames are every name of the caller's home that a home-based guard reads: Home
// (the launcher's $HOME, or the passwd home) first, then Homes ($HOME and the passwd
// entry's, canonical), each once. The account's other shells have the passwd home
// whatever the launcher's HOME says (attack review 38 F1).
func (h Host) homeNames() []string {
	var out []string
	for _, n := range append([]string{h.Home}, h.Homes...) {
		if filepath.IsAbs(n) && !slices.Contains(out, filepath.Clean(n)) {
			out = append(out, filepath.Clean(n))
		}
	}
	return out
}
