package mounts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// The real-kernel tests re-execute the test binary in a new user and mount namespace
// (uid 0 inside mapped to the caller), where it has CAP_SYS_ADMIN over its own mounts.
// TestMain runs the scenario named by scenarioEnv there and exits; the child prints one
// "FAIL ..." line per failed check and exits 1 if any failed, 2 if it could not run.
const (
	scenarioEnv = "GOSBX_MOUNTS_TEST_SCENARIO"
	baseEnv     = "GOSBX_MOUNTS_TEST_BASE"
	outsideEnv  = "GOSBX_MOUNTS_TEST_OUTSIDE"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(scenarioEnv); name != "" {
		os.Exit(runScenario(name))
	}
	os.Exit(m.Run())
}

var scenarios = map[string]func(c *checker, base string){
	"pivot":        scenarioPivot,
	"escape-setup": scenarioEscapeSetup,
	"escape-api":   scenarioEscapeAPI,
	"readonly":     scenarioReadOnly,
	"mask":         scenarioMask,
	"cache":        scenarioCache,
	"file":         scenarioFile,
}

type checker struct{ failed bool }

func (c *checker) errorf(format string, a ...any) {
	fmt.Printf("FAIL "+format+"\n", a...)
	c.failed = true
}

// ok reports a check that must have succeeded.
func (c *checker) ok(what string, err error) {
	if err != nil {
		c.errorf("%s: %v", what, err)
	}
}

// errno reports a check that must have failed with want.
func (c *checker) errno(what string, err error, want unix.Errno) {
	if !errors.Is(err, want) {
		c.errorf("%s: got error %v; want %v", what, err, want)
	}
}

type fatal struct{ err error }

func runScenario(name string) (code int) {
	f, ok := scenarios[name]
	if !ok {
		fmt.Printf("FAIL unknown scenario %q\n", name)
		return 2
	}
	c := &checker{}
	defer func() {
		if r := recover(); r != nil {
			ft, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			fmt.Printf("FAIL fatal: %v\n", ft.err)
			code = 2
		}
	}()
	f(c, os.Getenv(baseEnv))
	if c.failed {
		return 1
	}
	return 0
}

func must(err error) {
	if err != nil {
		panic(fatal{err})
	}
}

// runInNamespace runs scenario in a child in new user and mount namespaces and fails t
// with the child's report unless every check passed.
func runInNamespace(t *testing.T, scenario string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+strings.SplitN(t.Name(), "/", 2)[0]+"$")
	cmd.Env = append(os.Environ(), append([]string{scenarioEnv + "=" + scenario}, env...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EINVAL) {
			t.Skipf("cannot create a user namespace here (unprivileged user namespaces disabled?): %v", err)
		}
		t.Fatal(err)
	}
	err := cmd.Wait()
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "FAIL ") {
			t.Error(strings.TrimPrefix(line, "FAIL "))
		}
	}
	if err != nil {
		t.Fatalf("scenario %s in a user namespace: %v\n%s", scenario, err, out.String())
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func create(p string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func readString(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

// TestSetupPivotRoot builds a small root (a read-only bind, a tmpfs, a sealed tmpfs with
// a bind inside, symlinks), pivots into it and checks what is writable.
func TestSetupPivotRoot(t *testing.T) {
	base := t.TempDir()
	writeFile(t, filepath.Join(base, "data", "a.txt"), "hello")
	runInNamespace(t, "pivot", baseEnv+"="+base)
	if _, err := os.Stat(filepath.Join(base, "data", "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a write to the read-only bind reached the host: %v", err)
	}
}

func scenarioPivot(c *checker, base string) {
	data := filepath.Join(base, "data")
	spec := &config.Config{
		Mounts: []specs.Mount{
			{Destination: "/data", Type: "bind", Source: data, Options: []string{"rbind", "nosuid", "nodev", "ro"}},
			{Destination: "/scratch", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=0755"}},
			{Destination: "/sealed", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "ro", "mode=0755"}},
			{Destination: "/sealed/inner", Type: "bind", Source: data, Options: []string{"bind", "ro"}},
		},
		Symlinks: []Symlink{
			{Path: "/link", Target: "data/a.txt"},
			{Path: "/deep/dir/abs", Target: "/data/a.txt"},
		},
	}
	r, err := Setup(spec, nil)
	must(err)
	c.ok("the same symlink again", r.Symlink("data/a.txt", "/link"))
	err = r.Symlink("elsewhere", "/link")
	c.errno("a conflicting symlink", err, unix.EEXIST)
	var me *Error
	if err != nil && (!errors.As(err, &me) || me.Op != "symlink") {
		c.errorf("conflicting symlink error %v (%T) is not a symlink *Error", err, err)
	}
	must(r.PivotRoot())

	if wd, err := os.Getwd(); err != nil || wd != "/" {
		c.errorf("cwd after PivotRoot = %q, %v; want /", wd, err)
	}
	if s, err := readString("/data/a.txt"); err != nil || s != "hello" {
		c.errorf("read /data/a.txt = %q, %v", s, err)
	}
	c.errno("create in the read-only bind", create("/data/new"), unix.EROFS)
	c.errno("write to a file of the read-only bind", os.WriteFile("/data/a.txt", []byte("x"), 0), unix.EROFS)
	c.ok("create in the tmpfs", os.WriteFile("/scratch/x", []byte("scratch"), 0o644))
	if s, err := readString("/scratch/x"); err != nil || s != "scratch" {
		c.errorf("read back /scratch/x = %q, %v", s, err)
	}
	c.ok("mkdir in the tmpfs", os.Mkdir("/scratch/d", 0o755))
	c.errno("mkdir in /", os.Mkdir("/newdir", 0o755), unix.EROFS)
	c.errno("create in /", create("/newfile"), unix.EROFS)
	c.errno("create in the sealed tmpfs", create("/sealed/x"), unix.EROFS)
	if s, err := readString("/sealed/inner/a.txt"); err != nil || s != "hello" {
		c.errorf("read the bind inside the sealed tmpfs = %q, %v", s, err)
	}
	if target, err := os.Readlink("/link"); err != nil || target != "data/a.txt" {
		c.errorf("readlink /link = %q, %v", target, err)
	}
	if s, err := readString("/link"); err != nil || s != "hello" {
		c.errorf("read through /link = %q, %v", s, err)
	}
	if s, err := readString("/deep/dir/abs"); err != nil || s != "hello" {
		c.errorf("read through /deep/dir/abs = %q, %v", s, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/", &st); err != nil || st.Flags&unix.ST_RDONLY == 0 {
		c.errorf("statfs / flags %#x, %v; want ST_RDONLY", st.Flags, err)
	}
	if err := unix.Statfs("/data", &st); err != nil || st.Flags&unix.ST_NOSUID == 0 || st.Flags&unix.ST_NODEV == 0 {
		c.errorf("statfs /data flags %#x, %v; want nosuid,nodev", st.Flags, err)
	}
	if _, err := os.Stat(base); !errors.Is(err, os.ErrNotExist) {
		c.errorf("the host path %s is still reachable after PivotRoot: %v", base, err)
	}
	entries, err := os.ReadDir("/")
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if err != nil || strings.Join(names, " ") != "data deep link scratch sealed" {
		c.errorf("the new root holds %q, %v; want only what the spec names", names, err)
	}
}

// escapeDirs makes base/ws, the bound directory, holding symlinks that lead to outside,
// a host directory that the child's staging mount (on /tmp) does not hide.
func escapeDirs(t *testing.T) (base, outside string) {
	t.Helper()
	base = t.TempDir()
	outside, err := os.MkdirTemp("/var/tmp", "gosbx-mounts-outside-")
	if err != nil {
		t.Skipf("need a directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(base, "file"), "source")
	if err := os.Symlink(outside, filepath.Join(ws, "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.Repeat("../", 30)+strings.TrimPrefix(outside, "/"), filepath.Join(ws, "evildots")); err != nil {
		t.Fatal(err)
	}
	return base, outside
}

func checkOutsideUntouched(t *testing.T, outside string) {
	t.Helper()
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("the sandbox setup created %s on the host", filepath.Join(outside, e.Name()))
	}
}

// TestSetupRefusesSymlinkTarget: a mount whose target goes through a symlink planted in a
// bound directory fails with ELOOP, and nothing appears on the host.
func TestSetupRefusesSymlinkTarget(t *testing.T) {
	for _, dest := range []string{"/ws/evil/sub", "/ws/evil", "/ws/evildots/sub", "/ws/evil/a/b/c"} {
		t.Run(dest, func(t *testing.T) {
			base, outside := escapeDirs(t)
			runInNamespace(t, "escape-setup", baseEnv+"="+base, outsideEnv+"="+dest)
			checkOutsideUntouched(t, outside)
		})
	}
}

func scenarioEscapeSetup(c *checker, base string) {
	dest := os.Getenv(outsideEnv)
	spec := &config.Config{Mounts: []specs.Mount{
		{Destination: "/ws", Type: "bind", Source: filepath.Join(base, "ws"), Options: []string{"rbind", "nosuid", "nodev"}},
		{Destination: dest, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev"}},
	}}
	_, err := Setup(spec, nil)
	c.errno("Setup with a tmpfs at "+dest, err, unix.ELOOP)
	var me *Error
	if err != nil && (!errors.As(err, &me) || me.Target != dest || me.Source != "tmpfs") {
		c.errorf("error %q (%T) does not name the tmpfs at %s", err, err, dest)
	}
}

// TestRootRefusesSymlinkTarget: each Root operation that creates a mount point or a
// symlink refuses a path through a planted symlink.
func TestRootRefusesSymlinkTarget(t *testing.T) {
	base, outside := escapeDirs(t)
	runInNamespace(t, "escape-api", baseEnv+"="+base)
	checkOutsideUntouched(t, outside)
}

func scenarioEscapeAPI(c *checker, base string) {
	file, err := OpenSource(filepath.Join(base, "file"), false)
	must(err)
	dir, err := OpenSource(filepath.Join(base, "ws"), true)
	must(err)
	r, err := Setup(&config.Config{Mounts: []specs.Mount{
		{Destination: "/ws", Type: "bind", Source: filepath.Join(base, "ws"), Options: []string{"rbind"}},
	}}, nil)
	must(err)
	c.errno("Bind of a file through evil", r.Bind(file, "/ws/evil/file", 0), unix.ELOOP)
	c.errno("Bind of a dir through evildots", r.Bind(dir, "/ws/evildots/dir", 0), unix.ELOOP)
	c.errno("FS through evil", r.FS("tmpfs", "/ws/evil/t", nil, 0, false), unix.ELOOP)
	c.errno("FS onto evil", r.FS("tmpfs", "/ws/evil", nil, 0, false), unix.ELOOP)
	c.errno("Symlink through evil", r.Symlink("/etc/passwd", "/ws/evil/lnk"), unix.ELOOP)
	c.errno("Symlink through evildots", r.Symlink("x", "/ws/evildots/deeper/lnk"), unix.ELOOP)
	// ReadOnly follows no symlink at all (a protected path reached through one was
	// swapped); Mask follows them, but only inside the new root, where the outside path
	// does not exist: nothing to do.
	c.errno("ReadOnly through evil", r.ReadOnly("/ws/evil", false), unix.ELOOP)
	null, err := OpenNull("/dev/null")
	must(err)
	c.ok("Mask through evil", r.Mask("/ws/evil", null))
	c.ok("a legitimate tmpfs", r.FS("tmpfs", "/elsewhere/t", nil, 0, false))
}

// TestReadOnly re-binds paths inside a read-write bind read-only; the rest stays
// writable. The child writes everywhere; the host then sees which writes landed.
func TestReadOnly(t *testing.T) {
	base := t.TempDir()
	rw := filepath.Join(base, "rw")
	for _, d := range []string{"keep", "prot", ".git/objects", "prot2"} {
		if err := os.MkdirAll(filepath.Join(rw, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(rw, "file.txt"), "original")
	if err := os.Symlink("/rw/prot2", filepath.Join(rw, "alias")); err != nil {
		t.Fatal(err)
	}
	runInNamespace(t, "readonly", baseEnv+"="+base)
	for _, p := range []string{"keep/x", "new", "file-sibling"} {
		if _, err := os.Stat(filepath.Join(rw, p)); err != nil {
			t.Errorf("the writable part: %v", err)
		}
	}
	for _, p := range []string{"prot/x", ".git/x", ".git/objects/x"} {
		if _, err := os.Stat(filepath.Join(rw, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a write to the protected %s reached the host: %v", p, err)
		}
	}
	if s, _ := os.ReadFile(filepath.Join(rw, "file.txt")); string(s) != "original" {
		t.Errorf("the protected file.txt now holds %q", s)
	}
}

func scenarioReadOnly(c *checker, base string) {
	spec := &config.Config{
		Mounts:           []specs.Mount{{Destination: "/rw", Type: "bind", Source: filepath.Join(base, "rw"), Options: []string{"rbind", "nosuid", "nodev"}}},
		Linux:            &config.Linux{ReadonlyPaths: []string{"/rw/prot", "/rw/.git", "/rw/file.txt", "/rw/missing"}},
		ReadonlyOptional: []string{"/rw/missing"},
	}
	r, err := Setup(spec, nil)
	must(err)
	c.errno("ReadOnly of a symlink", r.ReadOnly("/rw/alias", false), unix.ELOOP)
	c.errno("ReadOnly of a missing required path", r.ReadOnly("/rw/missing2", false), unix.ENOENT)
	must(r.PivotRoot())
	c.ok("write in keep", os.WriteFile("/rw/keep/x", []byte("x"), 0o644))
	c.ok("write at the top", os.WriteFile("/rw/new", []byte("x"), 0o644))
	c.ok("write next to the file", os.WriteFile("/rw/file-sibling", []byte("x"), 0o644))
	c.errno("write in prot", create("/rw/prot/x"), unix.EROFS)
	c.errno("write in .git", create("/rw/.git/x"), unix.EROFS)
	c.errno("write in .git/objects", create("/rw/.git/objects/x"), unix.EROFS)
	c.errno("write to file.txt", os.WriteFile("/rw/file.txt", []byte("changed"), 0), unix.EROFS)
	c.errno("remove prot", os.Remove("/rw/prot"), unix.EBUSY)
	if _, err := os.Stat("/rw/missing"); !errors.Is(err, os.ErrNotExist) {
		c.errorf("ReadOnly of a missing path created it: %v", err)
	}
}

// TestMask hides a file under /dev/null and a directory under an empty read-only tmpfs.
func TestMask(t *testing.T) {
	base := t.TempDir()
	writeFile(t, filepath.Join(base, "data", "secret.txt"), "s3cret")
	writeFile(t, filepath.Join(base, "data", "secretdir", "inner.txt"), "inner")
	writeFile(t, filepath.Join(base, "rw", "secret2"), "s3cret2")
	runInNamespace(t, "mask", baseEnv+"="+base)
	if s, _ := os.ReadFile(filepath.Join(base, "rw", "secret2")); string(s) != "s3cret2" {
		t.Errorf("a write to the masked file reached the host: %q", s)
	}
	if _, err := os.Stat(filepath.Join(base, "data", "secretdir", "inner.txt")); err != nil {
		t.Errorf("masking changed the host: %v", err)
	}
}

func scenarioMask(c *checker, base string) {
	spec := &config.Config{
		Mounts: []specs.Mount{
			{Destination: "/data", Type: "bind", Source: filepath.Join(base, "data"), Options: []string{"rbind", "ro"}},
			{Destination: "/rw", Type: "bind", Source: filepath.Join(base, "rw"), Options: []string{"rbind"}},
		},
		Linux: &config.Linux{MaskedPaths: []string{"/data/secret.txt", "/data/secretdir", "/data/missing", "/rw/secret2"}},
	}
	r, err := Setup(spec, nil)
	must(err)
	must(r.PivotRoot())
	if s, err := readString("/data/secret.txt"); err != nil || s != "" {
		c.errorf("read the masked file = %q, %v; want empty", s, err)
	}
	if fi, err := os.Stat("/data/secret.txt"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		c.errorf("the masked file is %v, %v; want the null character device", fi.Mode(), err)
	}
	if entries, err := os.ReadDir("/data/secretdir"); err != nil || len(entries) != 0 {
		c.errorf("the masked dir lists %v, %v; want nothing", entries, err)
	}
	if _, err := os.Stat("/data/secretdir/inner.txt"); !errors.Is(err, os.ErrNotExist) {
		c.errorf("the masked dir's file is reachable: %v", err)
	}
	c.errno("create in the masked dir", create("/data/secretdir/x"), unix.EROFS)
	// A write either fails or goes to the null device (a read-only mount does not stop
	// writes to a device node); in neither case may it reach the host file.
	if err := os.WriteFile("/rw/secret2", []byte("overwritten"), 0); err != nil && !errors.Is(err, unix.EROFS) {
		c.errorf("write to the masked file: %v", err)
	}
	if s, err := readString("/rw/secret2"); err != nil || s != "" {
		c.errorf("read the masked rw file = %q, %v; want empty", s, err)
	}
	if _, err := os.Stat("/data/missing"); !errors.Is(err, os.ErrNotExist) {
		c.errorf("Mask of a missing path created it: %v", err)
	}
}

// TestDirCache: the directories Root caches while it builds the root never outlive a
// mount over them. A tmpfs over a directory already holding a mount point, then a mount
// below it, lands in the new tmpfs; a mask reached through a symlink hides what it
// masks from later mounts too; a file bind onto a planted symlink fails.
func TestDirCache(t *testing.T) {
	base, outside := escapeDirs(t)
	writeFile(t, filepath.Join(base, "data", "a.txt"), "hello")
	runInNamespace(t, "cache", baseEnv+"="+base)
	checkOutsideUntouched(t, outside)
}

func scenarioCache(c *checker, base string) {
	spec := &config.Config{
		Mounts: []specs.Mount{
			{Destination: "/x/y", Type: "tmpfs", Source: "tmpfs", Options: []string{"mode=0755"}},
			{Destination: "/x", Type: "tmpfs", Source: "tmpfs", Options: []string{"mode=0755"}},
			{Destination: "/x/z", Type: "tmpfs", Source: "tmpfs", Options: []string{"mode=0755"}},
			{Destination: "/x/z/d", Type: "bind", Source: filepath.Join(base, "data"), Options: []string{"rbind", "ro"}},
			{Destination: "/ws", Type: "bind", Source: filepath.Join(base, "ws"), Options: []string{"rbind"}},
			{Destination: "/m/sub", Type: "tmpfs", Source: "tmpfs", Options: []string{"mode=0755"}},
		},
		Symlinks: []Symlink{{Path: "/x/z/link", Target: "d/a.txt"}, {Path: "/alias", Target: "m"}},
	}
	file, err := OpenSource(filepath.Join(base, "file"), false)
	must(err)
	r, err := Setup(spec, nil)
	must(err)
	c.errno("a file bind onto a planted symlink", r.Bind(file, "/ws/evil", 0), unix.ELOOP)
	c.ok("a tmpfs in the tmpfs over /x", r.FS("tmpfs", "/x/e", nil, 0, false))
	null, err := OpenNull("/dev/null")
	must(err)
	c.ok("mask /m through a symlink", r.Mask("/alias", null))
	c.errno("a tmpfs below the mask", r.FS("tmpfs", "/m/w", nil, 0, false), unix.EROFS)
	must(r.PivotRoot())
	if _, err := os.Lstat("/x/y"); !errors.Is(err, os.ErrNotExist) {
		c.errorf("/x/y, under the tmpfs over /x, is visible: %v", err)
	}
	var x, z, e unix.Stat_t
	c.ok("stat /x", unix.Stat("/x", &x))
	c.ok("stat /x/z", unix.Stat("/x/z", &z))
	c.ok("stat /x/e", unix.Stat("/x/e", &e))
	if x.Dev == z.Dev || x.Dev == e.Dev || z.Dev == e.Dev {
		c.errorf("/x, /x/z, /x/e share a file system (devs %d %d %d); want three tmpfs mounts", x.Dev, z.Dev, e.Dev)
	}
	if s, err := readString("/x/z/link"); err != nil || s != "hello" {
		c.errorf("read /x/z/link = %q, %v", s, err)
	}
	if entries, err := os.ReadDir("/m"); err != nil || len(entries) != 0 {
		c.errorf("the masked /m lists %v, %v; want nothing", entries, err)
	}
}

// TestFile covers a file of a read-only bind with a file of gosbx's own, and, through
// a symlink, the file the symlink leads to inside the root; the host's files are
// unchanged.
func TestFile(t *testing.T) {
	base := t.TempDir()
	writeFile(t, filepath.Join(base, "etc", "resolv.conf"), "nameserver 10.0.0.1\n")
	must2(t, os.MkdirAll(filepath.Join(base, "etc2"), 0o755))
	must2(t, os.Symlink("../run/resolve/stub.conf", filepath.Join(base, "etc2", "resolv.conf")))
	runInNamespace(t, "file", baseEnv+"="+base)
	if s, _ := os.ReadFile(filepath.Join(base, "etc", "resolv.conf")); string(s) != "nameserver 10.0.0.1\n" {
		t.Errorf("the host's file now holds %q", s)
	}
	if l, _ := os.Readlink(filepath.Join(base, "etc2", "resolv.conf")); l != "../run/resolve/stub.conf" {
		t.Errorf("the host's symlink now says %q", l)
	}
}

func must2(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func scenarioFile(c *checker, base string) {
	spec := &config.Config{Mounts: []specs.Mount{
		{Destination: "/etc", Type: "bind", Source: filepath.Join(base, "etc"), Options: []string{"rbind", "ro", "nosuid", "nodev"}},
		{Destination: "/etc2", Type: "bind", Source: filepath.Join(base, "etc2"), Options: []string{"rbind", "ro", "nosuid", "nodev"}},
		{Destination: "/run", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev"}},
	}}
	r, err := Setup(spec, nil)
	must(err)
	const mine = "nameserver 127.0.0.1\n"
	c.ok("File over a file", r.File("/etc/resolv.conf", []byte(mine)))
	c.ok("File through a symlink", r.File("/etc2/resolv.conf", []byte(mine)))
	must(r.PivotRoot())
	for _, p := range []string{"/etc/resolv.conf", "/etc2/resolv.conf", "/run/resolve/stub.conf"} {
		if s, err := readString(p); err != nil || s != mine {
			c.errorf("%s: %q, %v; want %q", p, s, err, mine)
		}
	}
	c.errno("write to the file", os.WriteFile("/etc/resolv.conf", []byte("x"), 0), unix.EROFS)
	c.errno("write through the symlink", os.WriteFile("/etc2/resolv.conf", []byte("x"), 0), unix.EROFS)
	if l, err := os.Readlink("/etc2/resolv.conf"); err != nil || l != "../run/resolve/stub.conf" {
		c.errorf("the symlink inside: %q, %v", l, err)
	}
}
