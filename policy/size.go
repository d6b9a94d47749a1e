package policy

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// parseSize reads a size in bytes with binary units, as docker/go-units' RAMInBytes
// does (the grammar users know from `docker run --memory`): a number, decimals allowed,
// an optional space, an optional unit k, m, g, t or p in either case (powers of 1024),
// then an optional "i" and an optional "b": "512M", "2g", "1.5GiB", "1048576", "64 kb".
// Written here because that package compiles a regexp at its package init, which every
// start of gosbx paid (issue 20). Errors: a malformed size, or one beyond int64.
func parseSize(s string) (int64, error) {
	num := s
	i := 0
	for i < len(num) && (num[i] >= '0' && num[i] <= '9' || num[i] == '.') {
		i++
	}
	num, rest := s[:i], s[i:]
	if num == "" || num[0] == '.' || num[len(num)-1] == '.' || strings.Contains(num, "..") {
		return 0, errors.New("no number")
	}
	rest = strings.TrimPrefix(rest, " ")
	mult := float64(1)
	if rest != "" {
		if k := strings.IndexByte("kmgtp", lower(rest[0])); k >= 0 {
			mult = math.Pow(1024, float64(k+1))
			rest = rest[1:]
		}
	}
	if rest != "" && lower(rest[0]) == 'i' {
		rest = rest[1:]
	}
	if rest != "" && lower(rest[0]) == 'b' {
		rest = rest[1:]
	}
	if rest != "" {
		return 0, errors.New("unknown unit")
	}
	if strings.Count(num, ".") > 1 {
		// "1.2.3"
		return 0, errors.New("more than one decimal point")
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, err
	}
	v := f * mult
	if v >= math.MaxInt64 {
		return 0, errors.New("too large")
	}
	return int64(v), nil
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
