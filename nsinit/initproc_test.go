package nsinit

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// An init the Go runtime ended on a signal another process sent it (its report:
// "SIGSEGV: segmentation violation", "PC=… sigcode=0 …", exit status 2) is named so,
// never with the hint to call nsinit.Init(); a fault of its own is said as a crash; an
// init that exited without such a report keeps the hint.
func TestDiedEarlyNamesSignal(t *testing.T) {
	exit2 := unix.WaitStatus(2 << 8)
	for _, c := range []struct {
		said  string
		want  []string
		never string
	}{
		{"SIGSEGV: segmentation violation; PC=0x46b3c1 m=0 sigcode=0 addr=0x0; goroutine 1 gp=0xc000002380 m=0 mp=0x5b1e20 [running]:",
			[]string{"killed by SIGSEGV", "another process sent it", "si_code 0"}, "nsinit.Init()"},
		{"SIGBUS: bus error; PC=0x46b3c1 m=0 sigcode=-6 addr=0x0",
			[]string{"killed by SIGBUS", "si_code -6"}, "nsinit.Init()"},
		// the runtime prints si_code as a uint64 (from an attack review: SI_SIGIO -5
		// read as "must call nsinit.Init()")
		{"SIGSEGV: segmentation violation; PC=0x46b3c1 m=0 sigcode=18446744073709551611 addr=0x0",
			[]string{"killed by SIGSEGV", "si_code -5"}, "nsinit.Init()"},
		{"SIGBUS: bus error; PC=0x46b3c1 m=3 sigcode=18446744073709551610",
			[]string{"killed by SIGBUS", "si_code -6"}, "nsinit.Init()"},
		{"SIGSEGV: segmentation violation; PC=0x0 m=0 sigcode=1 addr=0x0",
			[]string{"crashed on SIGSEGV"}, "nsinit.Init()"},
		{"", []string{"must call nsinit.Init() first in main"}, "killed by"},
		{"hello: world; sigcode=0", []string{"must call nsinit.Init() first in main"}, "killed by"},
	} {
		msg := diedEarly(exit2, c.said).Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("diedEarly(exit 2, %q) = %q, want %q in it", c.said, msg, w)
			}
		}
		if strings.Contains(msg, c.never) {
			t.Errorf("diedEarly(exit 2, %q) = %q, must not say %q", c.said, msg, c.never)
		}
	}
}
