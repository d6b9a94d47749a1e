package policy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/seccomp"
)

// Values of Policy.RootIdentityMap.
const (
	RootIdentityDeny  = "deny"
	RootIdentityAllow = "allow"
)

// IDRange is a range of host ids from which a root caller's launch takes one per
// sandbox, as the command's host uid and gid: Count ids from Base (config.IDRange).
type IDRange = config.IDRange

// DefaultIDRange is reserved for gosbx sandboxes: 2100000000-2100065535, inside the
// range systemd leaves unused (0x70000000-0x7FFEFFFF, see systemd's UIDS-GIDS.md), so
// no account, container range or dynamic user of a systemd host has these ids.
var DefaultIDRange = IDRange{Base: 2_100_000_000, Count: 65536}

// CommandIDs gives the command's uid and gid inside the sandbox for a caller h: 0 for a
// root caller (mapped to a host id of a range by nsinit), the caller's own otherwise, or
// uid/gid where given (--uid, --gid); and for a root caller (h.UID 0) the host id range
// its launch takes one from: idRange, or DefaultIDRange when nil (nil for any other
// caller). policy.Build and gosbx exec's early clone of the init both ask it.
func CommandIDs(h Host, uid, gid *uint32, idRange *IDRange) (cuid, cgid uint32, rng *IDRange) {
	cuid, cgid = uint32(h.UID), uint32(h.GID)
	if h.UID == 0 {
		cuid, cgid = 0, 0
		r := DefaultIDRange
		if idRange != nil {
			r = *idRange
		}
		rng = &r
	}
	if uid != nil {
		cuid = *uid
	}
	if gid != nil {
		cgid = *gid
	}
	return cuid, cgid, rng
}

// ParseIDRange reads "BASE:COUNT" (decimal), as given to --id-range or GOSBX_ID_RANGE.
func ParseIDRange(s string) (IDRange, error) {
	b, c, ok := strings.Cut(s, ":")
	base, err1 := strconv.ParseUint(strings.TrimSpace(b), 10, 32)
	count, err2 := strconv.ParseUint(strings.TrimSpace(c), 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return IDRange{}, fmt.Errorf("id range %q: want BASE:COUNT, two decimal numbers", s)
	}
	r := IDRange{Base: uint32(base), Count: uint32(count)}
	return r, r.Check()
}

// MaxID is the highest id a range may hold (config.MaxID).
const MaxID = config.MaxID

// CallerSeccomp is the seccomp configuration a launch by uid applies for sc (nil: the
// default profile): for root, the set-ID rules first (seccomp.NoSetIDRules), since a
// file the command makes in a root-owned workspace is root's on the host.
func CallerSeccomp(sc *seccomp.Config, uid int) *seccomp.Config {
	return callerSeccomp(sc, uid, seccomp.NoSetIDRules)
}

// ExportSeccomp is CallerSeccomp for a filter exported to run without gosbx's init
// (bwrap --seccomp): nobody answers a user notification there, so the set-ID calls
// fail with EPERM (seccomp.NoSetIDDenyRules).
func ExportSeccomp(sc *seccomp.Config, uid int) *seccomp.Config {
	return callerSeccomp(sc, uid, seccomp.NoSetIDDenyRules)
}

func callerSeccomp(sc *seccomp.Config, uid int, setID func() []seccomp.Rule) *seccomp.Config {
	if sc == nil {
		sc = &seccomp.Config{}
	}
	if uid != 0 {
		return sc
	}
	withRules := *sc
	withRules.Rules = append(setID(), sc.Rules...)
	return &withRules
}

// ownerSeccomp adds, after the policy's own rules (so that a policy's rule on chown
// still decides; before the profile's), the rules that answer a chown to an id the
// sandbox's user namespace does not map with success and no effect
// (seccomp.ForeignOwnerRules; uid and gid: the command's ids inside). Only a uid 0 caller's launch gets them: its command is
// root inside, so tar and cp -p try to restore an archive's owners, and the kernel's
// EINVAL for an unmapped id stops them (docs/decisions.md, "chown to an unmapped id").
func ownerSeccomp(sc *seccomp.Config, uid, gid uint32) *seccomp.Config {
	withRules := *sc
	withRules.Rules = append(append([]seccomp.Rule{}, sc.Rules...), seccomp.ForeignOwnerRules(uid, gid)...)
	return &withRules
}
