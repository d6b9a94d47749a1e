package egress

import "strings"

// checkFields says why header fields (or chunked trailer fields) are refused, or ""
// when every line is a field the proxy and any server parse alike (RFC 9112 5, RFC 9110
// 5.1 and 5.5): a name of token characters, non-empty, right before ':', and a value of
// visible characters, obs-text, SP and HTAB. Refused are an obs-fold line (starting
// with SP or HTAB, RFC 9112 5.2: a proxy may reject it; a server that unfolds it would
// join it to the field before, which the proxy framed and forwarded apart), whitespace
// before ':' (RFC 9112 5.1: must be rejected), and a CR, LF or other control byte in a
// value (RFC 9112 2.2: a bare CR, which a server could take for a line's end).
func checkFields(fields []string) string {
	for _, f := range fields {
		if why := checkField(f); why != "" {
			return why
		}
	}
	return ""
}

func checkField(f string) string {
	if f != "" && (f[0] == ' ' || f[0] == '\t') {
		return "an HTTP header line " + quoteField(f) + " that starts with whitespace (obs-fold, RFC 9112 5.2)"
	}
	name, value, ok := strings.Cut(f, ":")
	if !ok || !isToken(name) {
		return "an HTTP header line " + quoteField(f) + " whose field name is not a token before ':' (RFC 9110 5.1)"
	}
	for i := 0; i < len(value); i++ {
		if b := value[i]; b < ' ' && b != '\t' || b == 0x7f {
			return "an HTTP header field " + quoteField(f) + " with a control byte in its value (RFC 9110 5.5)"
		}
	}
	return ""
}

// isToken says whether s is an RFC 9110 5.6.2 token: one or more tchar.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(b)) {
			return false
		}
	}
	return true
}

// quoteField is f quoted for a message (peerText).
func quoteField(f string) string { return peerText(f) }

// lowerASCII is s with A-Z in lower case and every other byte as it is. Names, header
// field names and codings are compared so, never by Unicode case folding: Go's
// strings.ToLower and EqualFold fold U+212A KELVIN SIGN to 'k', so "chun\u212aed" was
// read as chunked and "p\u212ag.test" as pkg.test, while the server reads other bytes.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// equalFoldASCII says whether a and b are equal but for the case of A-Z (lowerASCII).
func equalFoldASCII(a, b string) bool {
	return len(a) == len(b) && lowerASCII(a) == lowerASCII(b)
}
