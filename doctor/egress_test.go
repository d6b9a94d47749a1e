package doctor

import (
	"fmt"
	"net"
	"testing"
)

func TestCheckEgress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	open := l.Addr().(*net.TCPAddr).Port
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shut := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	got := CheckEgress([]string{fmt.Sprintf("127.0.0.1:%d", open), fmt.Sprintf("127.0.0.1:%d", shut), "*.example.com", "pypi.org:*"})
	want := []Status{OK, Warn, Skip, Skip}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i, c := range got {
		if c.Status != want[i] {
			t.Errorf("%s: %s (%s), want %s", c.Name, c.Status, c.Detail, want[i])
		}
	}
	// the trial's "answers on port [18080]" (a Go slice printed)
	if w := fmt.Sprintf("answers on port %d from the host", open); got[0].Detail != "resolves and "+w {
		t.Errorf("detail %q, want %q", got[0].Detail, "resolves and "+w)
	}
	if got := portsText([]string{"443", "80"}); got != "ports 443 and 80" {
		t.Errorf("portsText: %q", got)
	}
	if bad := CheckEgress([]string{"*"}); len(bad) != 1 || bad[0].Status != Fail {
		t.Errorf("a bad pattern: %+v", bad)
	}
}
