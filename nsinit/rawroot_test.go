package nsinit

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/rawplan"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// rawRootEnv names the workspace of the Go side of TestRawRootSameMounts.
const rawRootEnv = "GOSBX_RAWROOT_WORKSPACE"

// rawRootTreesEnv, set, has the Go side build the root from trees (SetupTrees), as a
// root caller's init does.
const rawRootTreesEnv = "GOSBX_RAWROOT_TREES"

// rawRootConfig is the default agent policy's config for workspace (the command true).
func rawRootConfig(workspace string) (*config.Config, error) {
	h, err := policy.CurrentHost()
	if err != nil {
		return nil, err
	}
	h.Cwd = workspace
	return policy.Compile(policy.Options{Workspace: workspace, Args: []string{"true"}}, h)
}

// rawRootGoSide is the Go init's root in a new mount namespace (the test binary
// re-executed with CLONE_NEWNS): mounts.Setup and PivotRoot for the agent config,
// then its mount table on stdout.
func rawRootGoSide() {
	ws := os.Getenv(rawRootEnv)
	if ws == "" {
		return
	}
	spec, err := rawRootConfig(ws)
	if err == nil {
		var r *mounts.Root
		if os.Getenv(rawRootTreesEnv) != "" {
			// a root caller's: the trees cloned first (here, not in a launcher)
			var trees []*mounts.Source
			if trees, err = mounts.CloneSources(spec); err == nil {
				var fds []int
				for _, t := range trees {
					fds = append(fds, t.Fd())
				}
				r, err = mounts.SetupTrees(spec, fds)
			}
		} else {
			r, err = mounts.Setup(spec, nil)
		}
		if err == nil {
			err = r.PivotRoot()
		}
	}
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	os.Stdout.Write(b)
	os.Exit(0)
}

// mountRows are a mount table's rows without the numbers that differ between two
// builds (mount ids, device numbers): root, mount point, mount options, file system
// type, source, super options.
func mountRows(info string) []string {
	var rows []string
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := slices.Index(f, "-")
		if len(f) < 6 || sep < 0 || sep+3 >= len(f)+1 {
			continue
		}
		super := f[len(f)-1]
		rows = append(rows, strings.Join([]string{f[3], f[4], f[5], f[sep+1], f[sep+2], super}, " "))
	}
	return rows
}

// The raw plan's root is the Go init's: the default agent policy's root built both
// ways in a new mount namespace, from the same config, has the same mount table (every
// mount's root, mount point, options, type, source and super options, in order).
// Root only (the raw child makes no user namespace here); the integration tests run
// both paths as nobody.
func TestRawRootSameMounts(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the raw child here makes a mount namespace without a user namespace")
	}
	// the sources opened by path in the init (a caller other than root), and a root
	// caller's trees cloned by the launcher (SetupTrees, PlanSetupTrees)
	for _, trees := range []bool{false, true} {
		t.Run(fmt.Sprintf("trees %v", trees), func(t *testing.T) { rawRootSameMounts(t, trees) })
	}
}

func rawRootSameMounts(t *testing.T, trees bool) {
	ws := testWorkspace(t)
	spec, err := rawRootConfig(ws)
	if err != nil {
		t.Fatal(err)
	}

	// the Go init's
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), rawRootEnv+"="+ws)
	if trees {
		cmd.Env = append(cmd.Env, rawRootTreesEnv+"=1")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Go side: %v: %s", err, out)
	}
	goRows := mountRows(string(out))

	// the raw plan's
	var sources []int
	setup := mounts.PlanSetup
	if trees {
		srcs, err := mounts.CloneSources(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range srcs {
			defer s.Close()
			sources = append(sources, s.Fd())
		}
		setup = mounts.PlanSetupTrees
	} else {
		for _, src := range mounts.BindSources(spec) {
			fd, err := mounts.OpenSourcePath(src)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			sources = append(sources, fd)
		}
	}
	null, err := mounts.OpenNull("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	p, err := rawplan.New(1<<20, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	var rep, gate, ready [2]int
	for _, fds := range []*[2]int{&rep, &gate, &ready} {
		if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
	}
	s := p.Begin("mount")
	proc := p.Reg()
	p.Call(s, nil, unix.SYS_FSOPEN, rawplan.Lit(p.Str("proc")), rawplan.Lit(unix.FSOPEN_CLOEXEC)).Into(proc)
	rr, err := setup(p, s, spec, sources, null, proc)
	if err != nil {
		t.Fatal(err)
	}
	if err := rr.PlanPivotRoot(p.Begin("pivot_root")); err != nil {
		t.Fatal(err)
	}
	s = p.Begin("wait")
	p.Call(s, nil, unix.SYS_WRITE, rawplan.Lit(uintptr(ready[1])), rawplan.Lit(p.Str("r")), rawplan.Lit(1))
	p.Op(s, nil, rawplan.ReadOne, unix.SYS_READ, rawplan.Lit(uintptr(gate[0])), rawplan.Lit(p.Str("x")), rawplan.Lit(1))
	pid, err := rawplan.Start(p, unix.CLONE_NEWNS, rep[1])
	unix.Close(rep[1])
	unix.Close(gate[0])
	unix.Close(ready[1])
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		unix.Write(gate[1], []byte{1})
		unix.Close(gate[1])
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
	}()
	var b [1]byte
	if n, _ := readFull(ready[0], b[:]); n != 1 {
		t.Fatalf("the raw child failed: %v", readRawReport(p, rep[0]))
	}
	info, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	rawRows := mountRows(string(info))
	t.Logf("%d mounts each; raw plan %d ops", len(goRows), p.Len())
	if len(goRows) < 20 || !slices.Equal(goRows, rawRows) {
		t.Errorf("mount tables differ:\nGo init (%d):\n%s\nraw plan (%d):\n%s", len(goRows), strings.Join(goRows, "\n"), len(rawRows), strings.Join(rawRows, "\n"))
	}
}
