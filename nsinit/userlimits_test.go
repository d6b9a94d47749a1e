package nsinit

import (
	"errors"
	"testing"

	"github.com/gosbx/gosbx/internal/rawplan"
	"github.com/gosbx/gosbx/nsinit/config"
)

// A config with user counts but no procfs stops at step "user counts" in both inits:
// the counts are written only through the sandbox's own procfs, never the host's.
func TestUserCountsNeedOwnProc(t *testing.T) {
	counts := []config.UserCount{{Name: "max_inotify_instances", Max: 64}}
	if err := setUserCounts(-1, counts); !errors.Is(err, errNoProcForCounts) {
		t.Errorf("the Go init without a procfs: %v, want errNoProcForCounts", err)
	}
	if err := setUserCounts(-1, nil); err != nil {
		t.Errorf("the Go init without counts or a procfs: %v", err)
	}

	spec := stageSpec()
	spec.Mounts = nil
	spec.UserCounts = counts
	p, err := rawplan.New(1<<20, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	fds := &rawFds{mapsR: -1, mapsW: -1, holderSend: 22, holderRecv: 23, holderExe: 24, holderRepR: 25, holderRepW: 26, life: 27}
	_, err = planRawBuild(p, spec, fds)
	var se *stepError
	if !errors.As(err, &se) || se.step != "user counts" || !errors.Is(err, errNoProcForCounts) {
		t.Errorf("the raw init without a procfs: %v, want a step error at user counts", err)
	}
}
