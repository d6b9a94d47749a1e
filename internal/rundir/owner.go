package rundir

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Unmapped reports whether uid is not mapped in the caller's user namespace
// (/proc/self/uid_map's first column and count): the kernel shows the owner of such a
// file as the overflow uid (/proc/sys/kernel/overflowuid, 65534 by default), which is
// then no user here, but the host's root or another user outside the namespace
// (user_namespaces(7)). False when the map cannot be read.
func Unmapped(uid uint32) bool {
	f, err := os.Open("/proc/self/uid_map")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	read := false
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) != 3 {
			return false
		}
		first, err1 := strconv.ParseUint(w[0], 10, 32)
		count, err2 := strconv.ParseUint(w[2], 10, 33)
		if err1 != nil || err2 != nil {
			return false
		}
		if uint64(uid) >= first && uint64(uid)-first < count {
			return false
		}
		read = true
	}
	return read && sc.Err() == nil
}

// Owner names uid, a file's owner, for a message: "uid N", or for an unmapped one
// "an id this user namespace does not map (shown as the overflow uid N; outside it, the
// host's root or another user)", so that no message reads the overflow uid as the user
// who made a file.
func Owner(uid uint32) string {
	if Unmapped(uid) {
		return fmt.Sprintf("an id this user namespace does not map (shown as the overflow uid %d; outside it, the host's root or another user)", uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// UnmappedFix is the fix where a path of gosbx's runs through a directory an unmapped
// id owns: gosbx in this user namespace cannot tell that owner from a user who could
// replace it.
const UnmappedFix = "run gosbx as the host user, outside this user namespace, or set XDG_RUNTIME_DIR to a directory of mode 0700 " +
	"whose every directory above is owned by you or by this namespace's root"

// LeaveFix is the fix for a directory of gosbx's that an unmapped id owns (the host's
// root's /run/gosbx seen from uid 0 of a user namespace: attack review 38 F2): not to
// remove it, since its owner's sessions and cleanup journals may be there.
const LeaveFix = "leave it, its owner's sessions and cleanup journals may be there; " + UnmappedFix
