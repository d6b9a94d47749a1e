package cleanup

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// CheckOutside refuses a writable tree that holds a journal or runtime directory of
// the caller's under another environment, not only this one's (attack review 34 F6):
// with XDG_RUNTIME_DIR set, /run/user/UID (pam_systemd's, where XDG_RUNTIME_DIR points
// in a login's environment) and, for a caller other than root, /tmp/gosbx-UID (one
// without it) are refused all the same; an unrelated tree is not.
func TestCheckOutsideOtherEnvironments(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // 0700, the caller's
	uid := os.Geteuid()
	others := []string{"/run/user/" + strconv.Itoa(uid), "/run/user"}
	if uid != 0 {
		others = append(others, "/tmp/gosbx-"+strconv.Itoa(uid))
	}
	for _, w := range others {
		if err := CheckOutside([]string{w}); err == nil || !strings.Contains(err.Error(), "another environment") {
			t.Errorf("CheckOutside(%s) = %v, want a refusal naming another environment", w, err)
		}
	}
	if err := CheckOutside([]string{t.TempDir()}); err != nil {
		t.Errorf("an unrelated tree: %v", err)
	}
}
