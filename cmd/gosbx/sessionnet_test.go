package main

import (
	"strings"
	"testing"

	"github.com/gosbx/gosbx/egress"
)

// A denial's line, to its request or broadcast to every request, is one line of
// printable ASCII whatever its message holds (from an attack review: raw bytes of a
// peer in a message reached other requests' terminals).
func TestRouteLineText(t *testing.T) {
	var got []string
	r := &netRoutes{}
	r.sessionNet()
	r.begin()
	r.add(7, &netRoute{message: func(s string) { got = append(got, s) }})
	for _, origin := range []int{7, 0} {
		r.route(egress.Event{Net: "deny", Origin: origin, Message: "blocked x\ngosbx: FORGED \x1b[31m \u202e"})
	}
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2: %q", len(got), got)
	}
	for _, l := range got {
		body := strings.TrimSuffix(l, "\n")
		if strings.ContainsFunc(body, func(r rune) bool { return r < 0x20 || r >= 0x7f }) || !strings.Contains(body, `x\ngosbx: FORGED \x1b[31m \u202e`) {
			t.Errorf("line %q, want one printable line with the message escaped", l)
		}
	}
}
