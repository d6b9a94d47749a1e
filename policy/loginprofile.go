package policy

import (
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
)

// loginProfile is the ~/.profile written in the sandbox's private HOME: a login shell
// (bash -l, a tmux pane, su -) reads /etc/profile, which sets a PATH of its own, and
// then ~/.profile: this one puts back the command's PATH (the policy's, the
// toolchains' bin directories first). Only where HOME is the private tmpfs and nothing
// else (a bind, a --symlink) is at that name: nil otherwise. env is the command's
// environment, mounts and links the config's.
func loginProfile(home string, env []string, mounts []specs.Mount, links []config.Symlink) []config.File {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	if path == "" {
		return nil
	}
	name := strings.TrimSuffix(home, "/") + "/.profile"
	if !privateHomeName(home, name, mounts, links) {
		return nil
	}
	content := "# Written by gosbx: a login shell (bash -l, tmux's panes) reads /etc/profile, which\n" +
		"# sets its own PATH; this puts back the sandbox's (toolchains first, as the policy says).\n" +
		"PATH=" + shellQuote(path) + "\nexport PATH\n"
	if len(content) > config.MaxFileSize {
		// a convenience, not a boundary: a PATH this long (from an attack review: one
		// over 64 KiB failed every launch at Validate) gets no ~/.profile
		return nil
	}
	return []config.File{{Path: name, Content: content, Mode: 0o644}}
}

// shellQuote is s as one word of sh(1): in single quotes, each quote closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
