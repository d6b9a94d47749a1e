package policy

import (
	"errors"
	"strings"
	"testing"
)

// An option's *Error names its field as the others do, the flag's name without dashes
// ("memory", as "net", "ro", "env"): the trial's library program saw "--memory" and
// "--pids" beside "net".
func TestErrorFieldNames(t *testing.T) {
	h := Host{UID: 1000, GID: 1000, Home: "/home/u", Homes: []string{"/home/u"}, Cwd: t.TempDir(), Environ: []string{"PATH=/usr/bin:/bin"}}
	for want, r := range map[string]Resources{"memory": {Memory: "1K"}, "pids": {Pids: -1}, "memory-swap": {Memory: "64M", MemorySwap: "lots"}} {
		_, err := Compile(Options{Args: []string{"true"}, Resources: r}, h)
		var pe *Error
		if !errors.As(err, &pe) || pe.Field != want || strings.HasPrefix(err.Error(), "--") {
			t.Errorf("Resources %+v: %v (%T); want an *Error with Field %q", r, err, err, want)
		}
	}
}
