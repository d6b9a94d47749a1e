package integration

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reopenScript opens the command's stdin again for writing through its magic link and
// appends to it: on the caller's own file, a write outside every writable tree.
// (A relay's pipe of one page, as a session's supervisor makes for the client's pipe, is
// full with the file's first chunk: the write blocks, bounded by timeout.)
const reopenScript = `timeout 2 sh -c 'echo PWNED >> /proc/self/fd/0'; cat >/dev/null; readlink /proc/self/fd/0`

// victimFile is a file outside the workspace that the caller (and, mode 0666, any id a
// root caller's sandbox runs as) could write, opened read-only as the command's stdin.
func victimFile(t *testing.T, s *sandbox) (path string, f *os.File) {
	t.Helper()
	path = filepath.Join(s.base, "victim")
	must(t, os.WriteFile(path, []byte("orig\n"), 0o666))
	must(t, os.Chmod(path, 0o666))
	s.chown(path)
	f, err := os.Open(path)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return path, f
}

// A file the caller redirects read-only as stdin cannot be written by the command
// through /proc/self/fd/0 (it gets a pipe the launcher copies the file into); checked on
// the host file. Fails with the file passed as itself: the append lands.
func TestStdinFileNotReopenedWritable(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		path, f := victimFile(t, s)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", shellPath, "-c", reopenScript)
		cmd.Stdin = f
		r := s.runCmd(ctx, cmd)
		if b, _ := os.ReadFile(path); string(b) != "orig\n" {
			t.Fatalf("the command wrote the caller's read-only stdin file outside the workspace: %q\n%s", b, r)
		}
		if !strings.Contains(r.stdout, "pipe:") {
			t.Errorf("stdin inside is not a pipe: %s", r)
		}
	})
}

// The same through a session request: the client copies the file.
func TestStdinFileNotReopenedWritableSession(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("sf")
		path, f := victimFile(t, e.sandbox)
		ctx := e.limitCtx(runLimit)
		cmd := e.rawCommand(ctx, "exec", "--session", "sf", "--", shellPath, "-c", reopenScript)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		e.scope.wrap(cmd)
		cmd.Stdin = f
		r := e.runCmd(ctx, cmd)
		if b, _ := os.ReadFile(path); string(b) != "orig\n" {
			t.Fatalf("a session command wrote the caller's read-only stdin file: %q\n%s", b, r)
		}
		if !strings.Contains(r.stdout, "pipe:") {
			t.Errorf("stdin inside is not a pipe: %s", r)
		}
	})
}

// The copied stdin arrives whole, and the caller's offset ends past what the command
// read, no further: a command that reads nothing leaves it where it was (a `while
// read` loop around gosbx keeps its lines), one that reads all leaves it at the end.
func TestStdinFileCopiedExactly(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		data := make([]byte, 3<<20)
		_, err := rand.Read(data)
		must(t, err)
		path := filepath.Join(s.base, "in.bin")
		must(t, os.WriteFile(path, data, 0o644))
		s.chown(path)
		f, err := os.Open(path)
		must(t, err)
		defer f.Close()

		// 1000 bytes read by the caller first; the command reads the rest
		_, err = io.ReadFull(f, make([]byte, 1000))
		must(t, err)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", "sha256sum")
		cmd.Stdin = f
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "sha256sum of stdin")
		sum := sha256.Sum256(data[1000:])
		if got, _, _ := strings.Cut(r.stdout, " "); got != hex.EncodeToString(sum[:]) {
			t.Errorf("stdin arrived changed: %s, want %x", got, sum)
		}
		if off, _ := f.Seek(0, io.SeekCurrent); off != int64(len(data)) {
			t.Errorf("offset after a command that read all: %d, want %d", off, len(data))
		}

		// a command that reads nothing: the offset stays
		_, err = f.Seek(5000, io.SeekStart)
		must(t, err)
		ctx = s.limitCtx(runLimit)
		cmd = s.command(ctx, "--", "true")
		cmd.Stdin = f
		mustSucceed(t, s.runCmd(ctx, cmd), "true")
		if off, _ := f.Seek(0, io.SeekCurrent); off != 5000 {
			t.Errorf("offset after a command that read nothing: %d, want 5000", off)
		}

		// one that reads exactly 10 bytes (dd with one 10-byte block from a pipe)
		ctx = s.limitCtx(runLimit)
		cmd = s.command(ctx, "--", "dd", "bs=10", "count=1", "status=none")
		cmd.Stdin = f
		r = s.runCmd(ctx, cmd)
		mustSucceed(t, r, "dd")
		if !bytes.Equal([]byte(r.stdout), data[5000:5010]) {
			t.Errorf("dd read %q, want %q", r.stdout, data[5000:5010])
		}
		if off, _ := f.Seek(0, io.SeekCurrent); off != 5010 {
			t.Errorf("offset after a command that read 10 bytes: %d, want 5010", off)
		}
	})
}
