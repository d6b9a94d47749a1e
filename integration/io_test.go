package integration

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Piped stdin reaches the command intact, and EOF is delivered.
func TestStdin(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.runIn(strings.NewReader("hello\n"), "--", "cat")
		mustSucceed(t, r, "cat")
		if r.stdout != "hello\n" {
			t.Errorf("piped stdin arrived as %q", r.stdout)
		}
		big := make([]byte, 3<<20)
		_, _ = rand.Read(big)
		sum := sha256.Sum256(big)
		r = s.runIn(bytes.NewReader(big), "--", "sha256sum")
		mustSucceed(t, r, "sha256sum")
		if !strings.HasPrefix(r.stdout, hex.EncodeToString(sum[:])) {
			t.Errorf("3 MiB of stdin corrupted: %q", r.stdout)
		}
		// EOF: cat on an empty stdin ends at once.
		r = s.runIn(strings.NewReader(""), "--", "cat")
		mustSucceed(t, r, "cat on EOF")
		if r.elapsed > 15*time.Second {
			t.Errorf("EOF on stdin took %v to reach the command", r.elapsed)
		}
	})
}

// 50 MiB on stdout and 10 MB on stderr arrive complete and in order.
func TestLargeOutput(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		src := make([]byte, 50<<20)
		_, _ = rand.Read(src)
		p := filepath.Join(s.ws, "src.bin")
		must(t, os.WriteFile(p, src, 0o644))
		s.chown(p)
		want := sha256.Sum256(src)

		ctx := s.limitCtx(2 * runLimit)
		cmd := s.command(ctx, "--", "cat", p)
		h := sha256.New()
		cw := &countWriter{w: h}
		cmd.Stdout = cw
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "cat 50 MiB")
		if got := h.Sum(nil); !bytes.Equal(got, want[:]) || cw.n != 50<<20 {
			t.Errorf("50 MiB on stdout arrived as %d bytes, sha256 match %v", cw.n, bytes.Equal(got, want[:]))
		}

		r = s.sh(nil, `head -c 10000000 /dev/zero >&2`)
		mustSucceed(t, r, "stderr")
		if len(r.stderr) != 10000000 {
			t.Errorf("10 MB on stderr arrived as %d bytes", len(r.stderr))
		}
	})
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.w.Write(p)
}

// Many and large arguments pass through unchanged; a large caller
// environment does not get in the way.
func TestLargeArguments(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		// 131071 bytes: the largest single argument Linux accepts (128 KiB with the NUL).
		var sb strings.Builder
		for sb.Len() < 131071 {
			sb.WriteString("abcdefghijklmnopqrstuvwxyz0123456789")
		}
		arg := sb.String()[:131071]
		sum := sha256.Sum256([]byte(arg))
		r := s.sh(nil, `printf %s "$1" | sha256sum`, arg)
		mustSucceed(t, r, "128 KiB argument")
		if !strings.HasPrefix(r.stdout, hex.EncodeToString(sum[:])) {
			t.Errorf("a 131071-byte argument arrived changed: %q", r.stdout)
		}

		many := make([]string, 30000)
		for i := range many {
			many[i] = strconv.Itoa(i + 1)
		}
		r = s.sh(nil, `echo "$# $1 ${15000} ${30000}"`, many...)
		mustSucceed(t, r, "30000 arguments")
		if got := strings.TrimSpace(r.stdout); got != "30000 1 15000 30000" {
			t.Errorf("30000 arguments arrived as %q", got)
		}

		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, append([]string{"--", shellPath, "-c", `echo $#`, "_"}, many[:20000]...)...)
		pad := strings.Repeat("b", 2000)
		for i := 0; i < 250; i++ {
			cmd.Env = append(cmd.Env, "GOSBX_IT_PAD_"+strconv.Itoa(i)+"="+pad)
		}
		r = s.runCmd(ctx, cmd)
		mustSucceed(t, r, "large environment")
		if strings.TrimSpace(r.stdout) != "20000" {
			t.Errorf("with a 500 KB caller environment, arguments arrived as %q", r.stdout)
		}
	})
}

// Python multiprocessing (POSIX semaphores in /dev/shm) works; ptys can be
// opened inside; host /dev/shm is not visible and nothing leaks back to it.
func TestMultiprocessingAndShm(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		hostShm := "/dev/shm/gosbx-it-host-" + s.id
		must(t, os.WriteFile(hostShm, []byte("x"), 0o666))
		t.Cleanup(func() { os.Remove(hostShm) })
		innerShm := "/dev/shm/gosbx-it-inner-" + s.id
		t.Cleanup(func() { os.Remove(innerShm) })
		s.writeWS("mp.py", `import multiprocessing as mp, os, sys
def put(q):
    q.put(42)
if __name__ == "__main__":
    q = mp.Queue(); lock = mp.Lock()
    with lock:
        p = mp.Process(target=put, args=(q,)); p.start()
        assert q.get(timeout=20) == 42
        p.join()
    with mp.Pool(2) as pool:
        assert pool.map(abs, [-1, -2]) == [1, 2]
    m, sl = os.openpty()
    assert os.ttyname(sl).startswith("/dev/pts/"), os.ttyname(sl)
    assert not os.path.exists(sys.argv[1]), "host /dev/shm file visible"
    open(sys.argv[2], "w").write("inner")
    print("MP-OK")
`, 0o644)
		r := s.run("--", python, filepath.Join(s.ws, "mp.py"), hostShm, innerShm)
		mustSucceed(t, r, "multiprocessing")
		if !strings.Contains(r.stdout, "MP-OK") {
			t.Errorf("multiprocessing probe:\n%v", r)
		}
		if _, err := os.Stat(innerShm); err == nil {
			t.Errorf("a file written to /dev/shm inside appeared in the host /dev/shm")
		}
	})
}

// endless is an stdin that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'y'
	}
	return len(p), nil
}

// gosbx stops when its reader goes away, and stops reading stdin once the
// command has exited.
func TestStreamsEnd(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		ctx := s.limitCtx(30 * time.Second)
		cmd := s.command(ctx, "--", "yes")
		out, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		b := make([]byte, 10)
		if _, err := io.ReadFull(out, b); err != nil {
			t.Fatalf("no output from yes: %v", err)
		}
		out.Close()
		start := time.Now()
		if _, ok := waitTimeout(t, cmd, 15*time.Second); !ok {
			t.Errorf("gosbx kept running %v after its reader went away", time.Since(start))
		}

		r := s.runIn(endless{}, "--", "head", "-c", "10")
		if r.code != 0 || r.stdout != "yyyyyyyyyy" {
			t.Errorf("head -c 10 on an endless stdin:\n%v", r)
		}
		if r.elapsed > 10*time.Second {
			t.Errorf("gosbx kept consuming stdin %v after the command exited", r.elapsed)
		}
	})
}
