package policy

import "strings"

// How git 2.39 reads a remote's URL (transport.c transport_get, connect.c
// parse_connect_url and url_is_local_not_ssh, url.c is_url and url_decode): which
// URLs it reaches through a remote helper, which through its own transports, and the
// local path a "file://" URL or a plain path names.

// isURLSchemeChar is url.c is_urlschemechar: [A-Za-z0-9] first, then also "+.-".
func isURLSchemeChar(first bool, c byte) bool {
	alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	return alnum || !first && (c == '+' || c == '-' || c == '.')
}

// isURL is url.c is_url: a scheme of isURLSchemeChar, then "://".
func isURL(u string) bool {
	if u == "" || !isURLSchemeChar(true, u[0]) {
		return false
	}
	i := 1
	for i < len(u) && u[i] != ':' {
		if !isURLSchemeChar(false, u[i]) {
			return false
		}
		i++
	}
	return strings.HasPrefix(u[i:], "://")
}

// remoteHelper is the transport whose helper, git-remote-<transport>, git runs for the
// URL u (transport.c transport_get): "<transport>::<address>", or a "<scheme>://" git
// does not speak itself (the scheme compared as git does, case and all: "FILE://" goes
// to git-remote-FILE); "" for git's own (git, ssh, file, a path, scp-like).
func remoteHelper(u string) string {
	i := 0
	for i < len(u) && isURLSchemeChar(i == 0, u[i]) {
		i++
	}
	if i > 0 && strings.HasPrefix(u[i:], "::") {
		return u[:i]
	}
	if !isURL(u) {
		return ""
	}
	for _, own := range []string{"file://", "git://", "ssh://", "git+ssh://", "ssh+git://"} {
		if strings.HasPrefix(u, own) {
			return ""
		}
	}
	s, _, _ := strings.Cut(u, ":")
	return s
}

// localRemotePath is the path git's local transport opens for the remote URL u (its
// upload-pack and receive-pack run there: enter_repo), and whether u takes that
// transport at all. A "file://" URL is %-decoded (url_decode: "%XX" for XX not 00,
// never "+") and its host part, any host, dropped (parse_connect_url: the path starts
// at the first "/" after "file://", past a "[...]" host); a plain path is taken when
// url_is_local_not_ssh holds (no ":", or a "/" before the first ":") as written, or
// from the "]" closing a "[" at its start or after "@" (host_end, which
// parse_connect_url applies to it too: "[v]/up.git" opens "]/up.git"), otherwise it is
// scp-like [user@]host:path (ssh). Not local: a <transport>:: or other
// scheme:// URL (remoteHelper), and a file:// URL without a path (git refuses it).
func localRemotePath(u string) (string, bool) {
	if u == "" || remoteHelperOnly(u) {
		return "", false
	}
	if isURL(u) {
		if !strings.HasPrefix(u, "file://") {
			return "", false
		}
		host := urlDecode(u)[len("file://"):]
		i := strings.IndexByte(host[hostEnd(host):], '/')
		if i < 0 {
			return "", false
		}
		return host[hostEnd(host)+i:], true
	}
	if !urlIsLocalNotSSH(u) {
		return "", false
	}
	// parse_connect_url takes a local path from host_end too: one starting with "[", or
	// holding "@[", starts at the "]" closing it (attack review 30 F4)
	return u[hostEnd(u):], true
}

// remoteHelperOnly reports whether u is "<transport>::<address>".
func remoteHelperOnly(u string) bool {
	i := 0
	for i < len(u) && isURLSchemeChar(i == 0, u[i]) {
		i++
	}
	return i > 0 && strings.HasPrefix(u[i:], "::")
}

// urlIsLocalNotSSH is connect.c url_is_local_not_ssh on a POSIX system: no ":", or a
// "/" before the first ":".
func urlIsLocalNotSSH(u string) bool {
	c := strings.IndexByte(u, ':')
	s := strings.IndexByte(u, '/')
	return c < 0 || s >= 0 && s < c
}

// hostEnd is connect.c host_end (brackets kept): the offset in host of the "]" closing
// a "[" at its start or after "@", 0 otherwise.
func hostEnd(host string) int {
	start := 0
	if i := strings.Index(host, "@["); i >= 0 {
		start = i + 1
	}
	if start < len(host) && host[start] == '[' {
		if j := strings.IndexByte(host[start+1:], ']'); j >= 0 {
			return start + 1 + j
		}
	}
	return 0
}

// urlDecode is url.c url_decode: the scheme (up to the first ":") kept, then each
// "%XX" of two hex digits that is not "%00" replaced by its byte.
func urlDecode(u string) string {
	var b strings.Builder
	i := 0
	if c := strings.IndexByte(u, ':'); c > 0 {
		b.WriteString(u[:c])
		i = c
	}
	for ; i < len(u); i++ {
		if u[i] == '%' && i+2 < len(u) {
			if v, ok := hexByte(u[i+1], u[i+2]); ok && v != 0 {
				b.WriteByte(v)
				i += 2
				continue
			}
		}
		b.WriteByte(u[i])
	}
	return b.String()
}

func hexByte(a, b byte) (byte, bool) {
	h := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	x, ok1 := h(a)
	y, ok2 := h(b)
	return x<<4 | y, ok1 && ok2
}
