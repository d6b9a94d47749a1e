package main

import (
	"os"
	"strings"
)

// parseSessionExec reads `gosbx exec --session NAME [narrowing flags] [--] CMD...`
// without cobra: the warm path, where building exec's command and its ~40 flags costs
// more than the rest of the client (docs/decisions.md, "Speed, second attempt"). It
// takes only the long forms of the flags a session request carries (narrowingFlags):
// --session, --env, --chdir, --timeout, --status-fd as "--F V" or "--F=V", and bare
// --detach and --tty. ok is false for anything else (another flag, a shorthand,
// --help, a flag without its value, no --session), and the caller parses args with
// cobra as before, so usage errors and help print the same bytes.
func parseSessionExec(args []string) (r sessionExec, statusFd string, cmd []string, ok bool) {
	if len(args) < 2 || args[0] != "exec" {
		return r, "", nil, false
	}
	rest := args[1:]
	for len(rest) > 0 {
		a := rest[0]
		if a == "--" {
			rest = rest[1:]
			break
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			break // the first argument that is not a flag (SetInterspersed(false)): CMD
		}
		if !strings.HasPrefix(a, "--") {
			return r, "", nil, false // a shorthand (-h)
		}
		name, val, hasVal := strings.Cut(a[2:], "=")
		switch name {
		case "detach", "tty":
			if hasVal {
				return r, "", nil, false
			}
			if name == "detach" {
				r.detach = true
			} else {
				r.tty = true
			}
			rest = rest[1:]
			continue
		case "session", "env", "chdir", "timeout", "status-fd":
		default:
			return r, "", nil, false
		}
		if !hasVal {
			if len(rest) < 2 {
				return r, "", nil, false
			}
			val, rest = rest[1], rest[1:]
		}
		rest = rest[1:]
		switch name {
		case "session":
			r.name = val
		case "env":
			r.env = append(r.env, val)
		case "chdir":
			r.chdir = val
		case "timeout":
			r.timeout = val
		case "status-fd":
			statusFd = val
		}
	}
	if r.name == "" {
		return r, "", nil, false
	}
	return r, statusFd, rest, true
}

// runSessionExec does what exec's RunE does for a request parseSessionExec read.
func runSessionExec(r sessionExec, statusFd string, args []string) error {
	var status *os.File
	if statusFd != "" {
		var err error
		if status, err = openStatusFd(statusFd); err != nil {
			return usageError{err}
		}
	}
	return r.run(nil, args, status)
}
