package policy

import (
	"strings"
	"testing"

	"github.com/gosbx/gosbx/nsinit/cleanup"
)

// A session's unread state (cleanup.Snapshot) is said as such, not as a file the
// session's commands made that could not be removed (attack review 36 F2).
func TestNotRemovedNoteStateNotRead(t *testing.T) {
	n := NotRemovedNote("/w/.git/worktrees: "+cleanup.StateNotRead+"more than 100000 entries", "the session's commands")
	if !strings.Contains(n, "could not read /w/.git/worktrees") || strings.Contains(n, "created") {
		t.Errorf("note %q", n)
	}
}
