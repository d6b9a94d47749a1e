package seccomp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// ContainerNeed is a system call gosbx's launcher or init makes that container
// runtimes' default seccomp profiles refuse or allow only with CAP_SYS_ADMIN.
type ContainerNeed struct {
	Name string // the system call, as seccomp profiles name it
	Why  string // what gosbx calls it for, and where
}

// ContainerNeeds lists what a container's seccomp profile must allow for gosbx to build
// its sandbox inside it, beyond what Docker's and Podman's default profiles allow every
// container. Docker's default (moby profiles/seccomp/default.json) allows clone only
// without namespace flags, mount, umount2, unshare, the new mount API and sethostname
// only with CAP_SYS_ADMIN, pivot_root and keyctl never; Podman's (containers/common
// pkg/seccomp, /usr/share/containers/seccomp.json) allows all of them but sethostname. The integration test TestContainerProfileCalls
// traces a launch and checks this list against the calls it makes, both ways.
func ContainerNeeds() []ContainerNeed {
	return []ContainerNeed{
		{"clone", "the launcher clones the init with CLONE_NEWUSER and the other namespace flags (nsinit/cmd.go); the init clones the holder and the commands (clone_amd64.s)"},
		{"unshare", "the init makes the commands' pid namespace with unshare(CLONE_NEWPID) (nsinit/initsys.go)"},
		{"sethostname", "the init sets the hostname of its new UTS namespace (nsinit/stages.go)"},
		{"mount", "the init makes / rprivate in its new mount namespace (mounts/root.go)"},
		{"umount2", "the init detaches the old root after pivot_root (mounts/root.go)"},
		{"pivot_root", "the init enters its new root (mounts/root.go)"},
		{"open_tree", "every bind is cloned with open_tree(OPEN_TREE_CLONE) (mounts)"},
		{"fsopen", "tmpfs, procfs and devpts are made with the new mount API (mounts, mounts.ProcFS)"},
		{"fsconfig", "their options (size=, mode=, newinstance) (mounts)"},
		{"fsmount", "a mount of each file system context (mounts)"},
		{"move_mount", "attaches each mount at its target by descriptor (mounts)"},
		{"mount_setattr", "read-only, nosuid, nodev on binds and the read-only root (mounts)"},
		{"keyctl", "a fresh session keyring for the commands: KEYCTL_JOIN_SESSION_KEYRING (nsinit/init.go)"},
		{"memfd_create", "the holder program (the commands' pid 1) is written to a sealed memfd (nsinit/holder_amd64.go)"},
		{"execveat", "the holder is executed from that memfd (nsinit/procstage.go)"},
	}
}

// containerProfile is the seccomp profile format of Docker, Podman and the Kubernetes
// runtimes (containers/common pkg/seccomp, moby profiles/seccomp): what gosbx reads and
// writes of it. Unknown fields are refused, not dropped.
type containerProfile struct {
	DefaultAction   string          `json:"defaultAction"`
	DefaultErrnoRet *uint           `json:"defaultErrnoRet,omitempty"`
	DefaultErrno    string          `json:"defaultErrno,omitempty"`
	Architectures   []string        `json:"architectures,omitempty"`
	ArchMap         json.RawMessage `json:"archMap,omitempty"`
	ListenerPath    string          `json:"listenerPath,omitempty"`
	ListenerMeta    string          `json:"listenerMetadata,omitempty"`
	Flags           []string        `json:"flags,omitempty"`
	Syscalls        []containerRule `json:"syscalls"`
}

type containerRule struct {
	Names    []string        `json:"names,omitempty"`
	Name     string          `json:"name,omitempty"` // the older one-name form
	Action   string          `json:"action"`
	ErrnoRet *uint           `json:"errnoRet,omitempty"`
	Errno    string          `json:"errno,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
	Comment  string          `json:"comment,omitempty"`
	Includes json.RawMessage `json:"includes,omitempty"`
	Excludes json.RawMessage `json:"excludes,omitempty"`
}

// ContainerProfile returns base, a container runtime's seccomp profile in JSON (Podman's
// /usr/share/containers/seccomp.json, Docker's default.json), with every ContainerNeeds
// call allowed without condition: each is taken out of the base's rules (its
// capability-gated allow, the deny for containers without the capability, an argument
// condition on clone's flags) and one rule allows them all, last. Everything else of the
// base is kept, in order. The output is indented JSON ending in a newline, the same for
// the same base. Errors: base is not JSON of that format (a field gosbx does not know
// is refused rather than lost), or its defaultAction is empty.
func ContainerProfile(base []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(base))
	dec.DisallowUnknownFields()
	var p containerProfile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("container seccomp profile: %w", err)
	}
	if p.DefaultAction == "" {
		return nil, fmt.Errorf("container seccomp profile: no defaultAction")
	}
	var needs []string
	for _, n := range ContainerNeeds() {
		needs = append(needs, n.Name)
	}
	rules := p.Syscalls[:0:0]
	for _, r := range p.Syscalls {
		if r.Name != "" {
			r.Names, r.Name = append(r.Names, r.Name), ""
		}
		r.Names = slices.DeleteFunc(slices.Clone(r.Names), func(n string) bool { return slices.Contains(needs, n) })
		if len(r.Names) > 0 {
			rules = append(rules, r)
		}
	}
	p.Syscalls = append(rules, containerRule{Names: needs, Action: "SCMP_ACT_ALLOW",
		Comment: "gosbx: what its launcher and init call to build a sandbox inside the container (gosbx seccomp container-profile)"})
	out, err := json.MarshalIndent(&p, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("container seccomp profile: %w", err)
	}
	return append(out, '\n'), nil
}
