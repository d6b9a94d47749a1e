package nsinit

import (
	"fmt"
	"os"
	"strings"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/egress"
	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/nsinit/config"
)

// owner is what holds a sandbox from the outside for its whole life: the write end of
// its life pipe (when it closes, or its holder dies, the init ends the sandbox), its
// cgroup, a root caller's host id, and the cleanup after the run. Today's owner is the
// process that called Start (gosbx exec, a program using the library, a Pool); a
// detached session supervisor is to be a second one.
//
// Nothing of it is keyed on the owner's pid, which the kernel reuses: the sandbox has
// an id of its own, which names its cgroup (gosbx-<id>) and is written in its host id's
// lock file, and the owner holds a flock(2) on each (cgroup/owner.go, takeHostID). The
// kernel drops those locks when the owner dies, however it dies, so the next launch
// knows the owner is gone and reclaims the cgroup and the host id.
type owner struct {
	id     string       // the sandbox id (cgroup.NewID)
	life   *os.File     // the life pipe's write end (protocol.go, fd 5 of the init)
	group  cgroup.Group // the sandbox's cgroup, nil without one
	limits string       // why there is no cgroup, when limits were only defaults
	hostID *hostID      // a root caller's host id, held until the sandbox has ended
	// nsOwner owns the sandbox's user namespace when uid 0 keeps its own mapping (a uid 0
	// that is not a root caller, a root caller's uid 0 fallback): ownerRange. Held until
	// the sandbox has ended.
	nsOwner *hostID
	// nproc: the process limit is RLIMIT_NPROC, no cgroup (a root caller's default on
	// hostID, or any limit where no cgroup can be had: nprocInUserNS)
	nproc bool
	// nprocLimit is the RLIMIT_NPROC each process of a pooled sandbox or a session is to
	// get (nproc): startPooled and startInSession apply it to every process frame
	nprocLimit uint64
	// cpus lists the CPUs the sandbox was placed on (affinity.go), "" when not pinned
	cpus string
	// journal records the after-run cleanup this launch owes, so that the next launch
	// or doctor completes it if the owner dies first (cleanup.Journal).
	journal *cleanup.Journal
	// net is the owner's end of the init's fd 7 (egress.go), with the egress proxy
	// (config.Egress), served from when the init sends its listening sockets (netDone
	// closed), and the port forwards (config.Publish; publish.go), until the sandbox
	// ends.
	net       *netSock
	netDone   chan struct{}
	proxy     *egress.Proxy
	publisher *publisher
}

// sandboxID returns the owner's sandbox id, taking a new one the first time.
func (o *owner) sandboxID() string {
	if o.id == "" {
		o.id = newSandboxID()
	}
	return o.id
}

// newSandboxID makes sandbox ids (a variable so that tests can tell their sandboxes'
// cgroups from those of other programs on the host).
var newSandboxID = cgroup.NewID

// makeGroup creates the sandbox's cgroup, named by the sandbox id, when spec has
// resources. A host or caller without a usable cgroup stops the launch when a limit is
// required (spec.Limits), and is noted otherwise (the profile's defaults, or best
// effort).
//
// nproc says that the process limit, should no group be made, can be held as
// RLIMIT_NPROC instead (the caller sets it): then it is no longer missing.
func (o *owner) makeGroup(spec *config.Config, nproc bool) error {
	if spec.Linux == nil || spec.Linux.Resources == nil {
		return nil
	}
	info := spec.Limits
	if err := fault.Check("cgroup"); err != nil {
		return &SetupError{Step: "cgroup", Err: err}
	}
	g, err := newCgroup(spec.Linux.Resources, cgroup.Options{Parent: info.CgroupParent, ID: o.sandboxID()})
	if err == nil {
		o.group = g
		return nil
	}
	required := info.Required
	if nproc {
		// the process limit holds without the group: RLIMIT_NPROC (nprocInUserNS)
		o.nproc = true
		required = nil
		for _, r := range info.Required {
			if r != "pids" {
				required = append(required, r)
			}
		}
		if onlyPids(spec.Linux.Resources) {
			return nil
		}
	}
	if len(required) > 0 && !info.BestEffort {
		// the fix in the Hint, each way by its flag and its library field (a program of
		// the library sets no flag); in CLIHint by the flag and the policy file's key
		// only (trial finding T11: a CLI user read Go struct paths)
		var lib, cli []string
		way := func(l, c string) { lib, cli = append(lib, l), append(cli, c) }
		switch {
		case info.CgroupParent != "" && cgroup.Mode() != cgroup.V2:
			const why = ": it names a cgroup v2 group, and this host keeps its controllers in cgroup v1"
			way("drop --cgroup-parent (policy.Resources.CgroupParent, config.Limits.CgroupParent)"+why,
				"drop --cgroup-parent (or a policy file's cgroup_parent)"+why)
		case os.Geteuid() != 0:
			way("run as root", "run as root")
			way("name a cgroup v2 group delegated to you with --cgroup-parent (policy.Resources.CgroupParent, config.Limits.CgroupParent; cgroup v2 hosts)",
				"name a cgroup v2 group delegated to you with --cgroup-parent (or a policy file's cgroup_parent; cgroup v2 hosts)")
		}
		way(`accept running without them with --limits best-effort (policy.Resources.Limits "best-effort", config.Limits.BestEffort)`,
			"accept running without them with --limits best-effort (or a policy file's limits: best-effort)")
		return &SetupError{Step: "cgroup", Err: fmt.Errorf("the limits asked for (%s) cannot be applied: %w",
			strings.Join(required, ", "), err), Hint: strings.Join(lib, ", or "), CLIHint: strings.Join(cli, ", or ")}
	}
	o.limits = err.Error()
	return nil
}

// newCgroup makes a sandbox's group: cgroup.New (a test puts a cgroup v2 group of the
// unified hierarchy of a hybrid host in its place).
var newCgroup = cgroup.New

// dropGroup removes the cgroup, once the sandbox is gone.
func (o *owner) dropGroup() {
	if o.group != nil {
		o.group.Destroy()
		o.group = nil
	}
}

// release lets go of the sandbox once it is gone (its init reaped, and with it every
// process of its pid namespace): the life pipe, and the host id, free again.
func (o *owner) release() {
	o.stopNet()
	o.life.Close()
	o.hostID.release()
	o.nsOwner.release()
}

// afterRun does the cleanup that must follow the sandbox's end (cleanup.Run):
// what the command made that must not outlive it.
func (o *owner) afterRun(spec *config.Config) (removed, failed []string) {
	removed, failed = runCleanup(spec)
	// done whatever it reported: what failed, or was only noted, is said now, once;
	// replaying it at a later launch would act on a repository the user has changed
	// since (attack review 31 F2)
	o.journal.Done()
	return removed, failed
}

// IdentityMapNote says, after Start, why a root caller's command runs as host uid 0
// after all (its config's RootID.AllowHostRoot, and a read-write bind that could not be
// idmapped: the mounts error), "" when it runs as a host id of its range or the caller
// is not root. Result.IdentityMap says the same after Wait.
func (c *Cmd) IdentityMapNote() string { return c.identityMap }
