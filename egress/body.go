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
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "transfer-encoding":
			for _, c := range strings.Split(v, ",") {
				if c = strings.TrimSpace(c); c != "" {
					te = append(te, strings.ToLower(c))
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

// copyBody copies one body framed as f from br to w and returns the bytes written:
// a chunked body as it came (chunk lines, data, trailer fields), up to the empty line
// that ends it. Errors: a malformed chunk line, a chunk line or the trailer fields
// past maxHeader, br's and w's.
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
		size, _, _ := strings.Cut(strings.TrimRight(line, "\r\n"), ";")
		k, err := strconv.ParseUint(strings.TrimSpace(size), 16, 63)
		if err != nil || strings.TrimSpace(size) == "" {
			return n, fmt.Errorf("chunk line %q: not a chunk size", peerName(line))
		}
		if err := put(line); err != nil {
			return n, err
		}
		if k == 0 {
			for total := 0; ; {
				t, err := readLine(br, maxHeader-total)
				if err != nil {
					return n, err
				}
				total += len(t)
				if err := put(t); err != nil {
					return n, err
				}
				if strings.TrimRight(t, "\r\n") == "" {
					return n, nil
				}
			}
		}
		m, err := io.CopyN(w, br, int64(k))
		n += m
		if err != nil {
			return n, err
		}
		crlf, err := readLine(br, 2)
		if err != nil || strings.TrimRight(crlf, "\r\n") != "" {
			return n, errors.New("chunk data not followed by CRLF")
		}
		if err := put(crlf); err != nil {
			return n, err
		}
	}
}
