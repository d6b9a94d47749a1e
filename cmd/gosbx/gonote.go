package main

import (
	"path/filepath"
	"strings"

	"github.com/gosbx/gosbx/policy"
)

// goCacheNote is the stderr note for `gosbx exec -- go ...` with no cache: go's build
// cache (GOCACHE, else ~/.cache/go-build) lies on the sandbox's private HOME, so each
// run builds everything again (35 s for a small module's tests here, against 0.5 s
// warm). "" when the command is not go itself (a shell that runs go is not looked
// into), a cache is bound, the policy's cache is off with its own note, or GOCACHE is
// set inside (the caller chose where).
func goCacheNote(eff *policy.Policy, args, env []string) string {
	if len(args) == 0 || filepath.Base(args[0]) != "go" || eff.CacheDir() != nil || eff.CacheNote() != "" {
		return ""
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOCACHE=") {
			return ""
		}
	}
	return "gosbx: note: go's build cache starts empty in this sandbox (its HOME is private), so everything is built again: " +
		"--cache keeps one per workspace (the build profile's default: --policy build)"
}
