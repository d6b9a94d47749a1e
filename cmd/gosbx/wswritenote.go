package main

import (
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/policy"
)

// wsWriteNote is the note for a command that failed in a workspace ws the sandbox's
// command cannot write, for a caller that takes the unprivileged path (host.Root
// false): its uid is the command's, mapped to itself, and its capabilities, if any,
// hold only in the sandbox's user namespace, where another user's files (an owner not
// mapped) get none, so the mode bits decide alone. A container's root (uid 0 without
// CAP_SYS_ADMIN) in a workspace owned by uid 65534 got "Permission denied" from the
// command and no word from gosbx (new-user trial 2026-12-02 T4), where a root caller on
// the host is refused with the fix. "" when the command could write it (owner and
// u+w, or owner uid 0 mapped: root's override holds; the caller's group or a
// supplementary one and g+w; o+w), for a root caller (the workspace is idmapped to its
// owner), or when ws cannot be read. ACLs are not read: a note on a failure only, so a
// workspace an ACL opens gets at most a note it did not need.
func wsWriteNote(ws string, host policy.Host) string {
	if host.Root || ws == "" {
		return ""
	}
	var st unix.Stat_t
	if unix.Stat(ws, &st) != nil {
		return ""
	}
	uid, gid := os.Geteuid(), os.Getegid()
	groups, _ := os.Getgroups()
	mode := st.Mode & 0o7777
	switch {
	case int(st.Uid) == uid && (uid == 0 || mode&0o200 != 0):
		return ""
	case (int(st.Gid) == gid || slices.Contains(groups, int(st.Gid))) && mode&0o020 != 0:
		return ""
	case mode&0o002 != 0:
		return ""
	}
	who := fmt.Sprintf("you, uid %d", uid)
	if uid == 0 {
		// the only way a uid 0 gets here: no CAP_SYS_ADMIN (a container's root)
		who = "you, uid 0 without CAP_SYS_ADMIN (a container's root takes the unprivileged path: no capability over another user's files)"
	}
	return fmt.Sprintf("gosbx: note: the command failed, and the workspace %s is not writable by it: it is owned by uid %d (mode %#o), "+
		"and the command runs as %s; chown it to uid %d, or run gosbx as uid %d (in a container: --user %d)",
		policy.Shown(ws), st.Uid, mode, who, uid, st.Uid, st.Uid)
}
