package policy

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
)

// goTelemetryOff is the Go telemetry mode file (os.UserConfigDir()/go/telemetry/mode,
// golang.org/x/telemetry's Dir.Mode; what `go telemetry off` writes) saying "off",
// written in the sandbox's private HOME beside loginProfile's ~/.profile, under the
// same condition: HOME is the private tmpfs and nothing else (a bind, a --symlink) is
// at the file's name or a directory above it; nil otherwise. Why: with no mode file
// Go's mode is "local", and every go command (Go 1.23 and later) starts a detached
// telemetry child whose once-a-day upload token, kept in a HOME that starts empty, is
// free on each run; the one-shot sandbox ends with the command and kills it, and the
// left-running note told the user to use a session for a process they never started
// (new-user trial 2026-12-02 T7). Nothing is lost by "off": counters in the private
// HOME vanish with it, and no upload goes out of a sandbox. The caller's own mode file
// is not read (its HOME is not shown); an XDG_CONFIG_HOME passed in moves Go's
// directory, and this file is then unused. Its directories are made 0755
// (mounts.Root.WriteFile), the command's own as if it had made them.
func goTelemetryOff(home string, mounts []specs.Mount, links []config.Symlink) []config.File {
	name := home + "/.config/go/telemetry/mode"
	if home == "" || home == "/" || !privateHomeName(home, name, mounts, links) {
		return nil
	}
	return []config.File{{Path: name, Content: "off\n", Mode: 0o644}}
}

// privateHomeName reports whether the path name below home lies in the private HOME
// tmpfs itself: the last mount holding it is the tmpfs at home, and no symlink of the
// config is at name or above it.
func privateHomeName(home, name string, mounts []specs.Mount, links []config.Symlink) bool {
	holder := ""
	for _, m := range mounts {
		if m.Destination == name || under(name, m.Destination) {
			holder = m.Destination + " " + m.Type
		}
	}
	if holder != home+" tmpfs" {
		return false
	}
	for _, l := range links {
		if l.Path == name || under(name, l.Path) {
			return false
		}
	}
	return true
}
