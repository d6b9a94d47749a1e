package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// framing is how a request's body is delimited (RFC 9112 6.3): chunked, or length
// bytes (0: no body).
type framing struct {
	chunked bool
	length  int64
}

// bodyFraming reads a request's framing from its header fields, or says why it is
// refused: a Transfer-Encoding whose last coding is not chunked, both
// Transfer-Encoding and Content-Length (RFC 9112 6.1: a request a server and the proxy
// could frame differently), or a Content-Length that is not one number.
func bodyFraming(fields []string) (framing, string) {
	var te, cl []string
	for _, f := range fields {
		k, v, _ := strings.Cut(f, ":")
		switch lowerASCII(strings.TrimSpace(k)) {
		case "transfer-encoding":
			for _, c := range strings.Split(v, ",") {
				if c = strings.TrimSpace(c); c != "" {
					te = append(te, lowerASCII(c))
				}
			}
		case "content-length":
			for _, c := range strings.Split(v, ",") {
				cl = append(cl, strings.TrimSpace(c))
			}
		}
	}
	switch {
	case len(te) > 0 && len(cl) > 0:
		return framing{}, "an HTTP request with both Transfer-Encoding and Content-Length"
	case len(te) > 0 && te[len(te)-1] != "chunked":
		return framing{}, "an HTTP request whose Transfer-Encoding does not end in chunked"
	case len(te) > 0:
		return framing{chunked: true}, ""
	case len(cl) == 0:
		return framing{}, ""
	}
	n, err := strconv.ParseInt(cl[0], 10, 64)
	for _, c := range cl[1:] {
		if c != cl[0] {
			err = errors.New("differing values")
		}
	}
	if err != nil || n < 0 || cl[0][0] == '+' {
		return framing{}, "an HTTP request with a Content-Length that is not one number"
	}
	return framing{length: n}, ""
}

// copyBody copies one body framed as f from br to w and returns the bytes written. A
// chunked body goes upstream as the proxy parsed it, not as it came: each chunk as
// its size in hex, CRLF, its data, CRLF; then "0", CRLF, CRLF. Chunk extensions and
// trailer fields are dropped (RFC 9112 7.1.1, RFC 9110 6.5.1: a recipient may ignore
// them), so that no byte the proxy framed one way reaches a server that could frame it
// another. The client's lines end in LF or CRLF (RFC 9112 2.2). Errors: a chunk line
// that is not a size (hex digits, then nothing or ';' and an extension without control
// bytes), chunk data not followed by a line's end, a trailer line that is not a field
// (checkField), a chunk line or the trailer fields past maxHeader, br's and w's.
func copyBody(w io.Writer, br *bufio.Reader, f framing) (int64, error) {
	if !f.chunked {
		return io.CopyN(w, br, f.length)
	}
	var n int64
	put := func(s string) error {
		m, err := io.WriteString(w, s)
		n += int64(m)
		return err
	}
	for {
		line, err := readLine(br, maxHeader)
		if err != nil {
			return n, err
		}
		k, ok := chunkSize(strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"))
		if !ok {
			return n, fmt.Errorf("chunk line %s: not a chunk size", peerText(line))
		}
		if k == 0 {
			for total := 0; ; {
				t, err := readLine(br, maxHeader-total)
				if err != nil {
					return n, err
				}
				total += len(t)
				t = strings.TrimSuffix(strings.TrimSuffix(t, "\n"), "\r")
				if t == "" {
					return n, put("0\r\n\r\n")
				}
				if why := checkField(t); why != "" {
					return n, errors.New("trailer: " + why)
				}
			}
		}
		if err := put(strconv.FormatUint(k, 16) + "\r\n"); err != nil {
			return n, err
		}
		m, err := io.CopyN(w, br, int64(k))
		n += m
		if err != nil {
			return n, err
		}
		crlf, err := readLine(br, 2)
		if err != nil || crlf != "\r\n" && crlf != "\n" {
			return n, errors.New("chunk data not followed by CRLF")
		}
		if err := put("\r\n"); err != nil {
			return n, err
		}
	}
}

// chunkSize parses a chunk line without its line end (RFC 9112 7.1): hex digits (at
// most 15: the size fits an int64), then nothing, or ';' after optional SP/HTAB and
// an extension of no control bytes (dropped).
func chunkSize(line string) (uint64, bool) {
	i := 0
	for i < len(line) && i < 16 && strings.IndexByte("0123456789abcdefABCDEF", line[i]) >= 0 {
		i++
	}
	if i == 0 || i > 15 {
		return 0, false
	}
	k, err := strconv.ParseUint(line[:i], 16, 63)
	if err != nil {
		return 0, false
	}
	ext := strings.TrimLeft(line[i:], " \t")
	if ext != "" && ext[0] != ';' || ext == "" && len(line) > i {
		return 0, false
	}
	for j := 0; j < len(ext); j++ {
		if b := ext[j]; b < ' ' && b != '\t' || b == 0x7f {
			return 0, false
		}
	}
	return k, true
}
