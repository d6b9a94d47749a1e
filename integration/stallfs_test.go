package integration

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// stallFS is a FUSE file system (the kernel's protocol, fuse(4), spoken on /dev/fuse
// directly) whose server never answers a LOOKUP of a name starting "stall-" (others:
// ENOENT): such a name looked up in its root waits
// in the kernel until the file system is released (its /dev/fuse closed: the kernel
// aborts the connection and the waits end with ENOTCONN). Its root answers GETATTR
// (a directory of mode 0777) so that it can be bound; other requests get ENOSYS.
// Mounted with allow_other (root only): any process may reach it.
type stallFS struct {
	dir     string
	dev     int         // /dev/fuse, blocking
	lookups chan string // each name looked up, as the server reads the request
	once    sync.Once
	served  chan struct{} // closed when serve returns
}

// FUSE opcodes and sizes (linux/fuse.h)
const (
	fuseLookup   = 1
	fuseForget   = 2
	fuseGetattr  = 3
	fuseInit     = 26
	fuseInterrup = 36
	fuseInHeader = 40
)

func newStallFS(t *testing.T, dir string) *stallFS {
	t.Helper()
	dev, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("/dev/fuse: %v", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", dev)
	if err := unix.Mount("gosbx-it-stall", dir, "fuse", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unix.Close(dev)
		t.Skipf("mount fuse on %s: %v", dir, err)
	}
	fs := &stallFS{dir: dir, dev: dev, lookups: make(chan string, 16), served: make(chan struct{})}
	go fs.serve()
	t.Cleanup(fs.release)
	return fs
}

// release ends the connection (every stalled lookup fails: umount2(2) MNT_FORCE aborts
// a FUSE connection) and unmounts; the descriptor is closed once the server has seen
// the end (not while it reads from it).
func (fs *stallFS) release() {
	fs.once.Do(func() {
		unix.Unmount(fs.dir, unix.MNT_FORCE|unix.MNT_DETACH)
		<-fs.served
		unix.Close(fs.dev)
	})
}

func (fs *stallFS) serve() {
	defer close(fs.served)
	buf := make([]byte, 1<<20+4096)
	le := binary.LittleEndian
	for {
		n, err := unix.Read(fs.dev, buf)
		if err == unix.ENODEV || err == unix.EBADF {
			return // released
		}
		if err != nil {
			continue // EINTR, ENOENT (a request interrupted meanwhile)
		}
		if n < fuseInHeader {
			continue
		}
		op, unique, nodeid := le.Uint32(buf[4:]), le.Uint64(buf[8:]), le.Uint64(buf[16:])
		body := buf[fuseInHeader:n]
		switch op {
		case fuseInit:
			out := make([]byte, 64)
			le.PutUint32(out[0:], 7)      // major
			le.PutUint32(out[4:], 31)     // minor
			le.PutUint32(out[8:], 0)      // max_readahead
			le.PutUint32(out[12:], 1<<18) // flags: FUSE_PARALLEL_DIROPS (each name's lookup reaches the server)
			le.PutUint32(out[20:], 4096)  // max_write
			le.PutUint16(out[16:], 1)     // max_background
			le.PutUint16(out[18:], 1)     // congestion_threshold
			fs.reply(unique, 0, out)
		case fuseLookup:
			name := string(body)
			if i := len(name) - 1; i >= 0 && name[i] == 0 {
				name = name[:i]
			}
			if !strings.HasPrefix(name, "stall-") {
				fs.reply(unique, -int32(unix.ENOENT), nil) // what the launch looks for
				continue
			}
			select {
			case fs.lookups <- name:
			default:
			}
			// no answer: the lookup waits
		case fuseGetattr:
			if nodeid != 1 {
				fs.reply(unique, -int32(unix.ENOENT), nil)
				continue
			}
			out := make([]byte, 16+88)
			le.PutUint64(out[0:], 1) // attr_valid, seconds
			a := out[16:]
			le.PutUint64(a[0:], 1)        // ino
			le.PutUint32(a[60:], 0o40777) // mode
			le.PutUint32(a[64:], 2)       // nlink
			le.PutUint32(a[80:], 4096)    // blksize
			fs.reply(unique, 0, out)
		case fuseForget, fuseInterrup:
			// no answer is due (an interrupted lookup stays unanswered)
		default:
			fs.reply(unique, -int32(unix.ENOSYS), nil)
		}
	}
}

func (fs *stallFS) reply(unique uint64, errno int32, body []byte) {
	out := make([]byte, 16+len(body))
	binary.LittleEndian.PutUint32(out[0:], uint32(len(out)))
	binary.LittleEndian.PutUint32(out[4:], uint32(errno))
	binary.LittleEndian.PutUint64(out[8:], unique)
	copy(out[16:], body)
	unix.Write(fs.dev, out)
}

// From the last session's note: a set-ID call on a file system whose server does not
// answer (here a FUSE server that never answers a LOOKUP) waits in the kernel for as
// long, uninterruptibly, and held the init's one set-ID handler thread, so that every
// other command's set-ID calls waited behind it. A session's init now has
// sessionSetIDThreads (3) handler threads, each taking one call at a time: with one
// and then two commands' set-ID chmods stalled on the file system (seen from the host:
// the server read their LOOKUPs), another command's set-ID chmod is still answered
// (its file's mode on the host: the bits dropped). Once the file system is released
// the stalled calls end (ENOTCONN) and their commands exit. With one thread, the first
// probe waits until its --timeout (124).
func TestSetIDStalledFileSystem(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, rootCaller)
	stall := e.base + "/stallfs"
	must(t, os.Mkdir(stall, 0o755))
	fs := newStallFS(t, stall)
	e.start("stall", "--ro", stall)
	probe := func(name string) {
		t.Helper()
		r := e.in("stall", []string{"--timeout", "20"}, "touch "+name+" && chmod 4750 "+name+" && echo ok")
		if r.stdout != "ok\n" {
			t.Fatalf("a set-ID chmod in the workspace with stalled ones running: %q, want ok\n%v", r.stdout, r)
		}
		if m := modeOf(t, e.ws+"/"+name); m != 0o750 {
			t.Errorf("host: %s is %v, want -rwxr-x--- (answered, S_ISUID dropped)", name, m)
		}
	}
	for i, name := range []string{"stall-1", "stall-2"} {
		r := e.gosbx("exec", "--session", "stall", "--detach", "--", python, "-c",
			fmt.Sprintf("import os\ntry:\n  os.chmod(%q, 0o4755)\nexcept OSError as e:\n  print(e.strerror)", stall+"/"+name))
		mustSucceed(t, r, "detached set-ID chmod on the stalled file system")
		for got := ""; got != name; {
			select {
			case got = <-fs.lookups:
			case <-time.After(20 * time.Second):
				t.Fatalf("stalled call %d: the file system never saw the LOOKUP of %s", i+1, name)
			}
		}
		probe(fmt.Sprintf("probe%d", i+1))
	}
	fs.release()
	r := e.in("stall", []string{"--timeout", "20"}, "true")
	mustSucceed(t, r, "a command after the release")
}
