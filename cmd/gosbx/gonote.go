package main

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/gosbx/gosbx/policy"
)

// goCacheNote is the stderr note for `gosbx exec -- go ...` with no cache: go's build
// cache (GOCACHE, else ~/.cache/go-build) lies on the sandbox's private HOME, so each
// run builds everything again (35 s for a small module's tests here, against 0.5 s
// warm). "" when the command is not go itself (a shell that runs go is not looked
// into), its subcommand builds nothing (goBuilds: `go version`, `go env` had the note
// for a cache they never use, new-user trial 2026-12-02 T7), a cache is bound, the
// policy's cache is off with its own note, or GOCACHE is set inside (the caller chose
// where).
func goCacheNote(eff *policy.Policy, args, env []string) string {
	if len(args) == 0 || filepath.Base(args[0]) != "go" || !goBuilds(args[1:]) || eff.CacheDir() != nil || eff.CacheNote() != "" {
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

// goBuildSubs are the go subcommands that compile, and so fill the build cache: build,
// install, run, test and vet, and tool (a module's tools are built on first use).
var goBuildSubs = []string{"build", "install", "run", "test", "vet", "tool"}

// goBuilds reports whether go's arguments args (after the program) name a subcommand
// of goBuildSubs, go's only flag before it, -C DIR (or -C=DIR), skipped.
func goBuilds(args []string) bool {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-C" || a == "--C":
			i++
		case strings.HasPrefix(a, "-C=") || strings.HasPrefix(a, "--C="):
		default:
			return slices.Contains(goBuildSubs, a)
		}
	}
	return false
}
