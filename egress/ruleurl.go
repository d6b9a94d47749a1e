package egress

import (
	"fmt"
	"strings"
)

// urlError is the error for a host pattern s that is a URL ("https://pypi.org/simple")
// or a host with a path ("pypi.org/simple"), nil for any other: read as HOST:PORT,
// a URL's scheme became a host and the rest a port ("port \"//pypi.org/simple\"": the
// trial's finding), which did not say what to give instead. The error names the host
// pattern that the URL stands for: its host, with its port unless the port is one a
// pattern allows by default (443, 80).
func urlError(s string) error {
	rest := s
	if i := strings.Index(s, "://"); i > 0 && isScheme(s[:i]) {
		rest = s[i+3:]
	} else if strings.HasPrefix(s, "[") || !hasPath(s) {
		return nil
	}
	hostport := rest
	if i := strings.IndexAny(hostport, "/?#"); i >= 0 {
		hostport = hostport[:i]
	}
	if i := strings.LastIndexByte(hostport, '@'); i >= 0 {
		hostport = hostport[i+1:] // user:password@
	}
	hostport = lowerASCII(hostport)
	if h, p, ok := strings.Cut(hostport, ":"); ok && !strings.HasPrefix(hostport, "[") && (p == "443" || p == "80" || p == "") {
		hostport = h
	} else if strings.HasPrefix(hostport, "[") && (strings.HasSuffix(hostport, "]:443") || strings.HasSuffix(hostport, "]:80")) {
		hostport = hostport[:strings.LastIndexByte(hostport, ':')]
	}
	if hostport == "" || strings.HasPrefix(hostport, "[]") {
		return fmt.Errorf("host pattern %q is a URL: a host pattern names a host (with an optional :PORT), not a scheme or a path: give the host name", s)
	}
	return fmt.Errorf("host pattern %q is a URL: a host pattern names a host (with an optional :PORT), not a scheme or a path: give %s", s, hostport)
}

// isScheme says whether s is a URL scheme (RFC 3986: a letter, then letters, digits,
// '+', '-', '.').
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !(c >= 'a' && c <= 'z' || i > 0 && (s[i] >= '0' && s[i] <= '9' || strings.IndexByte("+-.", s[i]) >= 0)) {
			return false
		}
	}
	return s != ""
}

// hasPath says whether s, a pattern with no scheme, goes on past its host with a path:
// a '/' followed by anything but an address prefix's length ("10.0.0.0/8",
// "10.0.0.0/8:443").
func hasPath(s string) bool {
	_, after, ok := strings.Cut(s, "/")
	if !ok {
		return false
	}
	bits, _, _ := strings.Cut(after, ":")
	if bits == "" {
		return true
	}
	for i := 0; i < len(bits); i++ {
		if bits[i] < '0' || bits[i] > '9' {
			return true
		}
	}
	return false
}
