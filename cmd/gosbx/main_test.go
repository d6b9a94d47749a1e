package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit"
)

// The test binary is also the sandbox's init stage (re-executed through /proc/self/exe).
func TestMain(m *testing.M) {
	nsinit.Init()
	os.Exit(m.Run())
}

func TestParseTimeout(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"", 0, false},
		{"30s", 30 * time.Second, false},
		{"5m", 5 * time.Minute, false},
		{"1h30m", 90 * time.Minute, false},
		{"250ms", 250 * time.Millisecond, false},
		{"1.5", 1500 * time.Millisecond, false},
		{"10", 10 * time.Second, false},
		{"0", 0, false}, // no timeout, as timeout(1)
		{"-1s", 0, true},
		{"-1", 0, true},
		{"-0.5", 0, true},
		{"abc", 0, true},
		{"NaN", 0, true},
		{"10x", 0, true},
		{" 10", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseTimeout(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseTimeout(%q) = %v; want an error", tt.in, got)
				}
				if !strings.Contains(err.Error(), "--timeout") {
					t.Errorf("error %q does not name the flag", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("parseTimeout(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestParseTimeoutRange: a value accepted without error is never negative, and a
// positive number never turns into 0 ("no timeout"). Huge, infinite and tiny values
// must be refused (or clamped), not silently disable the limit.
func TestParseTimeoutRange(t *testing.T) {
	for _, in := range []string{"inf", "+Inf", "1e10", "9999999999", "1e300", "1e-10", "0.0000000001", "9223372036.9"} {
		t.Run(in, func(t *testing.T) {
			got, err := parseTimeout(in)
			if err != nil {
				return
			}
			if got <= 0 {
				t.Errorf("parseTimeout(%q) = %v with no error: the sandbox would run without a timeout", in, got)
			}
		})
	}
}

func TestOpenStatusFd(t *testing.T) {
	for _, in := range []string{"", "abc", "-1", "3.5", "99999"} {
		t.Run("bad "+in, func(t *testing.T) {
			f, err := openStatusFd(in)
			if err == nil {
				f.Close()
				t.Fatalf("openStatusFd(%q) accepted", in)
			}
			if !strings.Contains(err.Error(), "--status-fd") {
				t.Errorf("error %q does not name the flag", err)
			}
		})
	}
	t.Run("closed fd", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		n := int(w.Fd())
		r.Close()
		w.Close()
		if f, err := openStatusFd(strconv.Itoa(n)); err == nil {
			f.Close()
			t.Fatalf("openStatusFd(%d) accepted a closed descriptor", n)
		}
	})
	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		n, err := unix.Dup(int(w.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		f, err := openStatusFd(strconv.Itoa(n))
		if err != nil {
			unix.Close(n)
			t.Fatal(err)
		}
		if int(f.Fd()) != n {
			t.Errorf("file has fd %d; want %d", f.Fd(), n)
		}
		if flags, err := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("fd %d flags %#x, %v; want close-on-exec", n, flags, err)
		}
		if _, err := f.Write([]byte("line\n")); err != nil {
			t.Fatal(err)
		}
		f.Close()
		b, _ := io.ReadAll(r)
		if string(b) != "line\n" {
			t.Errorf("read %q from the pipe", b)
		}
	})
}

// runCaptured calls run with os.Stdout and os.Stderr redirected and returns the exit
// status and what was printed.
func runCaptured(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	capture := func(f **os.File) (done func() string) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		old := *f
		*f = w
		ch := make(chan string)
		go func() {
			b, _ := io.ReadAll(r)
			r.Close()
			ch <- string(b)
		}()
		return func() string {
			*f = old
			w.Close()
			return <-ch
		}
	}
	outDone := capture(&os.Stdout)
	errDone := capture(&os.Stderr)
	code = run(args)
	return code, outDone(), errDone()
}

func TestRunUsage(t *testing.T) {
	ws := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // substring; "" means empty stderr
		stdout string
	}{
		{name: "unknown flag", args: []string{"exec", "--bogus"}, code: 125, stderr: "unknown flag: --bogus"},
		{name: "unknown flag after command", args: []string{"exec", "--bogus", "--", "true"}, code: 125, stderr: "--bogus"},
		{name: "no command", args: []string{"exec"}, code: 125, stderr: "no command"},
		{name: "empty command", args: []string{"exec", "--"}, code: 125, stderr: "no command"},
		{name: "bad timeout", args: []string{"exec", "--timeout", "abc", "--", "true"}, code: 125, stderr: "--timeout"},
		{name: "negative timeout", args: []string{"exec", "--timeout=-5s", "--", "true"}, code: 125, stderr: "--timeout"},
		{name: "bad status fd", args: []string{"exec", "--status-fd", "99999", "--", "true"}, code: 125, stderr: "--status-fd"},
		{name: "bad net", args: []string{"exec", "--workspace", ws, "--net", "bridge", "--", "true"}, code: 125, stderr: "network"},
		{name: "root workspace", args: []string{"exec", "--workspace", "/", "--", "true"}, code: 125, stderr: "workspace"},
		{name: "bad env", args: []string{"exec", "--workspace", ws, "--env", "NOEQUALS", "--", "true"}, code: 125, stderr: "env"},
		{name: "tty without a session", args: []string{"exec", "--tty", "--", "bash"}, code: 125, stderr: "--detach and --tty need --session NAME: start one with `gosbx session start NAME`"},
		{name: "tty without a session names attach", args: []string{"exec", "--tty", "--", "bash"}, code: 125, stderr: "`gosbx session attach NAME`"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 125, stderr: "unknown command"},
		{name: "version", args: []string{"version"}, code: 0, stdout: "gosbx "},
		{name: "--version", args: []string{"--version"}, code: 0, stdout: "gosbx "},
		{name: "-v", args: []string{"-v"}, code: 0, stdout: "gosbx "},
		{name: "no arguments", args: nil, code: 0, stdout: "gosbx runs a command"},
		{name: "version with args", args: []string{"version", "x"}, code: 125, stderr: "gosbx: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCaptured(t, tt.args...)
			if code != tt.code {
				t.Errorf("run(%q) = %d; want %d (stderr %q)", tt.args, code, tt.code, stderr)
			}
			if tt.stderr == "" && stderr != "" {
				t.Errorf("stderr %q; want none", stderr)
			}
			if tt.stderr != "" && (!strings.Contains(stderr, tt.stderr) || !strings.HasPrefix(stderr, "gosbx: ")) {
				t.Errorf("stderr %q; want \"gosbx: ...%s...\"", stderr, tt.stderr)
			}
			if !strings.HasPrefix(stdout, tt.stdout) {
				t.Errorf("stdout %q; want prefix %q", stdout, tt.stdout)
			}
		})
	}
}

func testWorkspace(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "gosbx-cmd-test-")
	if err != nil {
		t.Skipf("need a directory under /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err = filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func skipIfNoSandbox(t *testing.T, code int, stderr string) {
	t.Helper()
	if code == 125 && (strings.Contains(stderr, "failed at clone") || strings.Contains(stderr, "new procfs")) {
		t.Skipf("this host cannot build the sandbox: %s", stderr)
	}
}

func TestRunExec(t *testing.T) {
	ws := testWorkspace(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"exit 0", []string{"true"}, 0, ""},
		{"exit 7", []string{"sh", "-c", "exit 7"}, 7, ""},
		{"signal", []string{"sh", "-c", "kill -TERM $$"}, 143, ""},
		{"not found", []string{"gosbx-no-such-command"}, 127, "gosbx-no-such-command"},
		{"not executable", []string{"/etc/passwd"}, 126, "/etc/passwd"},
		{"timeout", []string{"--timeout", "0.3", "--", "sleep", "30"}, 124, "timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"exec", "--workspace", ws}, tt.args...)
			if tt.args[0] != "--timeout" {
				args = append([]string{"exec", "--workspace", ws, "--"}, tt.args...)
			}
			begin := time.Now()
			code, _, stderr := runCaptured(t, args...)
			skipIfNoSandbox(t, code, stderr)
			if code != tt.code {
				t.Errorf("run(%q) = %d; want %d (stderr %q)", args, code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.stderr) || (tt.stderr == "" && stderr != "") {
				t.Errorf("stderr %q; want %q", stderr, tt.stderr)
			}
			if d := time.Since(begin); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestRunStatusFd(t *testing.T) {
	ws := testWorkspace(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n, err := unix.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	lines := make(chan []string)
	go func() {
		var l []string
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l = append(l, sc.Text())
		}
		lines <- l
	}()
	code, _, stderr := runCaptured(t, "exec", "--workspace", ws, "--status-fd", strconv.Itoa(n), "--", "sh", "-c", "exit 5")
	// run closes the status file it made of n (the reader sees EOF); closing n here too
	// could close a file another test's code has been given the number of since.
	got := <-lines
	skipIfNoSandbox(t, code, stderr)
	if code != 5 {
		t.Fatalf("exit %d; want 5 (stderr %q)", code, stderr)
	}
	if len(got) != 3 {
		t.Fatalf("status lines %q; want child-pid, exec, exit", got)
	}
	var ev [3]map[string]any
	for i, l := range got {
		if err := json.Unmarshal([]byte(l), &ev[i]); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
	}
	if _, ok := ev[0]["child-pid"]; !ok {
		t.Errorf("first line %q lacks child-pid", got[0])
	}
	if ev[1]["exec"] != true {
		t.Errorf("second line %q is not the exec event", got[1])
	}
	if ev[2]["exit-code"] != float64(5) || ev[2]["timed-out"] != false {
		t.Errorf("third line %q; want exit-code 5, timed-out false", got[2])
	}
}

func TestRunStatusFdPolicyError(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n, err := unix.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	code, _, _ := runCaptured(t, "exec", "--workspace", "/", "--status-fd", strconv.Itoa(n), "--", "true")
	b, _ := io.ReadAll(r)
	if code != 125 {
		t.Errorf("exit %d; want 125", code)
	}
	var e map[string]any
	if err := json.Unmarshal(b, &e); err != nil || e["step"] != "policy" || !strings.Contains(e["error"].(string), "workspace") {
		t.Errorf("status %q, %v; want one policy error event", b, err)
	}
}
