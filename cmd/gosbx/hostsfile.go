package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/namehash"
	"github.com/gosbx/gosbx/internal/rundir"
	"github.com/gosbx/gosbx/nsinit/config"
)

// hostsPath is the host's hosts file (hosts(5)).
const hostsPath = "/etc/hosts"

// maxHosts bounds the host's hosts file copied (a larger one is left as it is shown).
const maxHosts = 1 << 20

// withHostsFile gives a sandbox with a UTS namespace of its own (its own hostname) an
// /etc/hosts of its own: the host's lines, then "127.0.1.1 HOSTNAME", as Docker and
// Podman write one, so that the sandbox's name resolves (`hostname -f`, getaddrinfo(3)
// of gethostname(2): Java's getLocalHost, sudo, Erlang's -sname) under --net none and
// strict, where the host's file knows nothing of the name and no resolver is reachable
// (from an attack review, r34 F2). Not with egress (--net proxy): its DNS stub answers
// the name already (127.0.0.1, where the proxy's capture and rules expect it). The file is written once per content in the
// caller's runtime directory (RUNDIR/hosts/hosts-SHA256, mode 0644, made by rename:
// never written while bound) and bound read-only over /etc/hosts, only where the spec
// shows the host's file there (its /etc, or /etc/hosts itself: strict's file bind gets
// the new source, no mount more). A host whose /etc/hosts is a symbolic link gets the
// file over the link's target, when that is what the spec shows.
//
// It is a convenience, not a boundary: with no runtime directory, a host file that
// cannot be read, or one it cannot write, the sandbox sees the host's file, as before.
// Called after checkRunDirHidden, which refuses binds of the runtime directory a policy
// asks for: this bind shows one file of it, read-only.
func withHostsFile(spec *config.Config) {
	if spec.Hostname == "" || spec.Linux == nil || !hasNS(spec.Linux.Namespaces, specs.UTSNamespace) || spec.Egress != nil {
		// (with egress, the sandbox's DNS stub answers its name: 127.0.0.1)
		return
	}
	target := hostsPath
	host, err := readHosts(target, unix.O_NOFOLLOW)
	if err == unix.ELOOP {
		if target, err = filepath.EvalSymlinks(hostsPath); err == nil {
			host, err = readHosts(target, 0)
		}
	}
	if err != nil {
		return
	}
	i, exact := showing(spec.Mounts, target)
	if i < 0 {
		return // the host's file is not shown: nothing to add to
	}
	src, err := writeHostsFile(host, spec.Hostname)
	if err != nil {
		return
	}
	if exact {
		// a bind of the file itself (strict): the same mount, another source
		spec.Mounts[i].Source = src
		return
	}
	spec.Mounts = append(spec.Mounts, specs.Mount{Destination: target, Type: "bind", Source: src,
		Options: []string{"rbind", "nosuid", "nodev", "noexec", "ro"}})
}

func hasNS(ns []specs.LinuxNamespace, t specs.LinuxNamespaceType) bool {
	for _, n := range ns {
		if n.Type == t && n.Path == "" {
			return true
		}
	}
	return false
}

// showing returns the index of the mount that shows path p inside (the last of those
// whose destination holds it, as mounted in order), if it is a bind showing the host's
// p at its own path, else -1; exact when that mount's destination is p itself.
func showing(mounts []specs.Mount, p string) (int, bool) {
	at := -1
	for i, m := range mounts {
		if m.Destination == p || within(p, m.Destination) {
			at = i
		}
	}
	if at < 0 {
		return -1, false
	}
	m := mounts[at]
	rel, err := filepath.Rel(m.Destination, p)
	if m.Type != "bind" || err != nil || filepath.Join(m.Source, rel) != p {
		return -1, false
	}
	return at, m.Destination == p
}

// readHosts reads the host's hosts file at p (open(2) with flags added), at most
// maxHosts bytes. Errors: open's (ELOOP for a symbolic link with O_NOFOLLOW), read's,
// a larger file.
func readHosts(p string, flags int) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 4096)
	for {
		if len(b) == cap(b) {
			if len(b) > maxHosts {
				return nil, errors.New("hosts file too large")
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// hostsContent is the sandbox's hosts file: the host's, then the sandbox's name.
func hostsContent(host []byte, hostname string) []byte {
	out := append([]byte(nil), host...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	line := "127.0.1.1\t" + hostname
	if short, _, ok := strings.Cut(hostname, "."); ok && short != "" {
		line += " " + short
	}
	return append(out, "# the sandbox's own name (gosbx)\n"+line+"\n"...)
}

// writeHostsFile returns the path of the file holding hostsContent(host, hostname) in
// the caller's runtime directory, written anew unless a file of exactly that content is
// there already, trusted only when it cannot be another user's (from an attack review,
// r35 F1: another local user could plant /tmp/gosbx-UID/hosts/hosts-SUM, the name being
// a hash of public data). The runtime directory and its hosts directory are checked as
// rundir.Private (the caller's, mode 0700, no symbolic link) before any file in them is
// read: no other user can then make, swap or rename a file there between this check
// and the bind. The file itself is opened O_NOFOLLOW and trusted only when it is a
// regular file of the caller's, not group- or other-writable, whose bytes are the
// content wanted; else it is written anew (a temporary file, O_EXCL, renamed over it).
// Errors: rundir.Make's, the hosts directory's mkdir(2) or check, the write's.
func writeHostsFile(host []byte, hostname string) (string, error) {
	uid, xdg := os.Getuid(), os.Getenv("XDG_RUNTIME_DIR")
	rd, err := rundir.Make(uid, xdg)
	if err != nil {
		return "", err
	}
	if c, err := filepath.EvalSymlinks(rd); err == nil {
		// the bind's source is opened with no symbolic link on its path (a runtime
		// directory under /var/run, a link to /run); rd itself is no link (Private), a
		// link above it is the caller's XDG_RUNTIME_DIR's or the system's
		rd = c
	}
	d := filepath.Join(rd, "hosts")
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	if err := rundir.Private(d, uid); err != nil {
		return "", err
	}
	content := hostsContent(host, hostname)
	sum := namehash.Sum256(content) // not crypto/sha256: its inits every start would pay
	p := filepath.Join(d, "hosts-"+hex.EncodeToString(sum[:12]))
	if sameHosts(p, uid, content) {
		return p, nil // the warm case, every launch after the first
	}
	f, err := os.CreateTemp(d, ".new-")
	if err != nil {
		return "", err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return p, nil
}

// sameHosts reports whether p is a regular file (not a symbolic link: O_NOFOLLOW) owned
// by uid, writable by its owner only, holding exactly content.
func sameHosts(p string, uid int, content []byte) bool {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != uid ||
		st.Mode&0o022 != 0 || st.Size != int64(len(content)) {
		return false
	}
	b := make([]byte, len(content)+1) // one more: a file grown since fstat differs
	n := 0
	for n < len(b) {
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		if m == 0 {
			break
		}
		n += m
	}
	return bytes.Equal(b[:n], content)
}
