package doctor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/netns"
	"github.com/gosbx/gosbx/mounts"
)

// ProbeArg is argv[1] of the gosbx binary re-executed as a doctor probe (inside a new
// namespace, or inside a sandbox). A program that links doctor calls Probe from main
// when it sees it.
const ProbeArg = "__doctor-probe"

// Probe runs probe mode args[0] and returns the exit status.
func Probe(args []string) int {
	if len(args) == 0 {
		return 2
	}
	var err error
	switch args[0] {
	case "ns":
		err = probeNamespace(args[1:])
	case "mountapi":
		// the errno as the exit status: the doctor's fix depends on it (ENOSYS: an old
		// kernel; EPERM: a filter or the kernel's refusal), not on the message's words
		if err = probeMountAPI(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			var errno unix.Errno
			if errors.As(err, &errno) && errno > 0 && errno < 255 {
				return int(errno)
			}
			return 255
		}
	case "overlay":
		err = probeOverlay()
	case "escape":
		return probeEscape(args[1:])
	case "wait":
		_, err = io.Copy(io.Discard, os.Stdin) // until the doctor closes stdin

	default:
		err = fmt.Errorf("unknown probe %q", args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// probeNamespace checks that /proc/self/ns/<type> differs from the parent's inode, and
// for net that lo comes up.
func probeNamespace(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("ns: want TYPE PARENT-INODE")
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/"+args[0], &st); err != nil {
		return err
	}
	if strconv.FormatUint(st.Ino, 10) == args[1] {
		return fmt.Errorf("still in the parent's %s namespace", args[0])
	}
	if args[0] == "net" {
		return netns.LoopbackUp() // what the init does
	}
	return nil
}

// errNoStaging is probeMountAPI's error when no staging directory exists.
var errNoStaging = errors.New("no directory to attach a mount to (none of /tmp, /mnt, /run, /dev, /proc)")

// probeMountAPI mounts a tmpfs with fsopen/fsconfig/fsmount/move_mount and makes it
// read-only with mount_setattr, as the sandbox's root is made (new user+mount ns), at
// the directory the sandbox attaches its root to (mounts.StagingDir: a container image
// without /tmp has /dev).
func probeMountAPI() error {
	staging := mounts.StagingDir()
	if staging == "" {
		return errNoStaging
	}
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("fsconfig: %w", err)
	}
	m, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("fsmount: %w", err)
	}
	defer unix.Close(m)
	if err := unix.MoveMount(m, "", unix.AT_FDCWD, staging, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount onto %s: %w", staging, err)
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, staging, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	return nil
}

// probeOverlay mounts an overlayfs on a tmpfs (new user+mount ns), at the staging
// directory as probeMountAPI.
func probeOverlay() error {
	dir := mounts.StagingDir()
	if dir == "" {
		return errNoStaging
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, ""); err != nil {
		return fmt.Errorf("tmpfs: %w", err)
	}
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("lowerdir=%[1]s/lower,upperdir=%[1]s/upper,workdir=%[1]s/work,userxattr", dir)
	if err := unix.Mount("overlay", filepath.Join(dir, "merged"), "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount overlay: %w", err)
	}
	return nil
}

// EscapeResult is what the escape probe inside a sandbox reports, one verdict each.
type EscapeResult struct {
	WriteOutside string `json:"write_outside"` // "" when denied, else what happened
	ReadHost     string `json:"read_host"`
	HostLoopback string `json:"host_loopback"`
	TIOCSTI      string `json:"tiocsti"`
	NewUserns    string `json:"new_userns"`
	SeccompProof string `json:"seccomp"` // ioctl(-1, TIOCSTI): EPERM from the filter (EBADF without)
	CapEff       string `json:"cap_eff"`
	CapBnd       string `json:"cap_bnd"`
	NoNewPrivs   string `json:"no_new_privs"`
}

// probeEscape runs inside a sandbox: CANARY (a host file that must stay unreadable),
// OUTSIDE (a host directory that must stay unwritten), PORT (a host loopback listener).
func probeEscape(args []string) int {
	if len(args) != 3 {
		return 2
	}
	canary, outside, port := args[0], args[1], args[2]
	var r EscapeResult
	for _, p := range []string{filepath.Join(outside, "escaped"), "/escaped-gosbx-doctor"} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err == nil {
			r.WriteOutside = "wrote " + p
		}
	}
	if b, err := os.ReadFile(canary); err == nil {
		r.ReadHost = fmt.Sprintf("read %d bytes of %s", len(b), canary)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
		c.Close()
		r.HostLoopback = "connected to the host's 127.0.0.1:" + port
	}
	if m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0); err == nil {
		unlock := 0
		unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, unlock)
		if n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN); err == nil {
			if s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0); err == nil {
				c := byte('x')
				if _, _, e := unix.Syscall(unix.SYS_IOCTL, s.Fd(), unix.TIOCSTI, uintptrOf(&c)); e == 0 {
					r.TIOCSTI = "pushed a character into a terminal"
				}
				s.Close()
			}
		}
		m.Close()
	}
	cmd := exec.Command("/proc/self/exe", "-h")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	if err := cmd.Start(); err == nil {
		cmd.Process.Kill()
		cmd.Wait()
		r.NewUserns = "created a user namespace"
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, ^uintptr(0), unix.TIOCSTI, 0); e != unix.EPERM {
		r.SeccompProof = "ioctl(-1, TIOCSTI) gave " + e.Error() + ", not the filter's EPERM"
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "CapEff":
				r.CapEff = v
			case "CapBnd":
				r.CapBnd = v
			case "NoNewPrivs":
				r.NoNewPrivs = v
			}
		}
	}
	json.NewEncoder(os.Stdout).Encode(r)
	return 0
}
