package nsinit

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Event is one status event, with bwrap's --json-status-fd keys.
type Event struct {
	ChildPid int `json:"child-pid,omitempty"` // host pid of the sandbox init (pid 1 inside)
	// CgroupNS is the sandbox's cgroup namespace as cloned; once the init is in the
	// sandbox's cgroup, its commands get one rooted there (sysfs.go), a child of it.
	CgroupNS uint64 `json:"cgroup-namespace,omitempty"`
	IpcNS    uint64 `json:"ipc-namespace,omitempty"`
	MntNS    uint64 `json:"mnt-namespace,omitempty"`
	NetNS    uint64 `json:"net-namespace,omitempty"`
	PidNS    uint64 `json:"pid-namespace,omitempty"`
	UserNS   uint64 `json:"user-namespace,omitempty"`
	UtsNS    uint64 `json:"uts-namespace,omitempty"`
	// SandboxID, with ChildPid, is the sandbox's own id (Cmd.SandboxID): its cgroup is
	// gosbx-<id>.
	SandboxID string `json:"sandbox-id,omitempty"`
	// HostUID, for a root caller, is the host uid and gid the command runs as, taken from
	// the spec's id range for this sandbox alone; IdentityMap says why it is 0 instead
	// (the policy allowed it and a read-write bind could not be idmapped).
	HostUID     *int64 `json:"host-uid,omitempty"`
	IdentityMap string `json:"identity-map,omitempty"`
	Exec        bool   `json:"exec,omitempty"` // execve(2) of the command succeeded
	Pid         int    `json:"pid,omitempty"`  // with Exec: the command's host pid
	Path        string `json:"path,omitempty"` // with Exec: the executable inside the sandbox
	ExitCode    *int   `json:"exit-code,omitempty"`
	Signal      int    `json:"signal,omitempty"`
	TimedOut    *bool  `json:"timed-out,omitempty"`
	WallMs      *int64 `json:"wall-ms,omitempty"`
	// Removed, with the exit: paths the command created that must not outlive it
	// (the config's Cleanup), removed.
	Removed []string `json:"removed,omitempty"`
	// NotRemoved, with the exit: such paths that could not be removed ("path: cause").
	NotRemoved []string `json:"not-removed,omitempty"`
	// With the exit: how limits were applied ("cgroup-v1", "cgroup-v2", "rlimit", "none"), and use.
	Limits        string `json:"limits,omitempty"`
	LimitsNote    string `json:"limits-note,omitempty"` // why "none", when limits were defaults or best effort
	OOMKilled     *bool  `json:"oom-killed,omitempty"`
	LimitHit      string `json:"limit-hit,omitempty"`
	MemoryPeak    int64  `json:"memory-peak-bytes,omitempty"`
	CPUUsec       *int64 `json:"cpu-usec,omitempty"`
	CPUUserUsec   int64  `json:"cpu-user-usec,omitempty"`
	CPUSystemUsec int64  `json:"cpu-system-usec,omitempty"`
	PidsPeak      int64  `json:"pids-peak,omitempty"`
	// With the exit: why use is not known (limits "rlimit" or "none": no cgroup counts it).
	UsageNote string `json:"usage-note,omitempty"`
	// With the exit: the CPUs the sandbox was placed on for a CPU limit ("0", "1,3"),
	// ceil(--cpus) of the caller's own (affinity.go); absent when not narrowed.
	CPUs string `json:"cpus,omitempty"`
	// With the exit: how many processes other than the command were still running when
	// it exited, killed with the sandbox (Result.LeftRunning).
	LeftRunning int    `json:"left-running,omitempty"`
	Error       string `json:"error,omitempty"`
	Step        string `json:"step,omitempty"`   // with Error: the step that failed ("exec" for 126/127)
	Status      int    `json:"status,omitempty"` // with Error: the exit status gosbx exec returns (125, 126, 127)
}

// namespaceEvent reads the namespace inode numbers of the init from /proc/PID/ns.
func namespaceEvent(pid int) Event {
	e := Event{ChildPid: pid}
	for name, dst := range map[string]*uint64{"cgroup": &e.CgroupNS, "ipc": &e.IpcNS, "mnt": &e.MntNS,
		"net": &e.NetNS, "pid": &e.PidNS, "user": &e.UserNS, "uts": &e.UtsNS} {
		var st unix.Stat_t
		if unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/"+name, &st) == nil {
			*dst = st.Ino
		}
	}
	return e
}

// childPid returns the host pid of the init's child whose pid in the init's namespace
// is inner (the command; the commands' pid 1 is a child too), from the children files
// of all the init's threads and each child's NSpid (proc(5)). The reaper does not reap
// before the launcher's acknowledgement, so the command is there, running or a zombie.
func childPid(pid, inner int) int {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if nsPid(f, 1) == inner {
				n, _ := strconv.Atoi(f)
				return n
			}
		}
	}
	return 0
}

// nsPid returns field i of the NSpid line of /proc/<pid>/status: the process's pid in
// the i-th pid namespace down from the reader's (0 is its pid here), or -1.
func nsPid(pid string, i int) int {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "NSpid:"); ok {
			f := strings.Fields(rest)
			if i < len(f) {
				n, err := strconv.Atoi(f[i])
				if err == nil {
					return n
				}
			}
		}
	}
	return -1
}
