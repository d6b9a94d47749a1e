package nsinit

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The holder program is a well-formed static x86-64 executable whose one loadable
// segment maps the file from its start, read and execute, with the entry on the code.
func TestHolderELF(t *testing.T) {
	f, err := elf.NewFile(bytes.NewReader(holderELF()))
	if err != nil {
		t.Fatal(err)
	}
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
		t.Fatalf("class %v machine %v type %v", f.Class, f.Machine, f.Type)
	}
	if len(f.Progs) != 1 {
		t.Fatalf("%d program headers, want 1", len(f.Progs))
	}
	p := f.Progs[0]
	size := uint64(len(holderELF()))
	if p.Type != elf.PT_LOAD || p.Flags != elf.PF_R|elf.PF_X || p.Off != 0 || p.Filesz != size || p.Memsz != size {
		t.Fatalf("program header %+v", p.ProgHeader)
	}
	if f.Entry != p.Vaddr+size-uint64(len(holderCode)) {
		t.Fatalf("entry %#x, code at %#x", f.Entry, p.Vaddr+size-uint64(len(holderCode)))
	}
}

// Run by itself as uid 65534, the holder makes itself not dumpable (its /proc files
// then belong to root, proc(5)), finds no child to reap and waits for SIGCHLD in
// rt_sigtimedwait(2) (128), and stays there.
func TestHolderRuns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs the holder as another user and reads its /proc/PID/syscall: needs root")
	}
	dir, err := os.MkdirTemp("/var/tmp", "gosbx-holder-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "holder")
	if err := os.WriteFile(path, holderELF(), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	proc := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/"
	var sc string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile(proc + "syscall")
		if sc = string(b); strings.HasPrefix(sc, "128 ") {
			break
		}
	}
	if !strings.HasPrefix(sc, "128 ") {
		t.Fatalf("the holder is in %q, want rt_sigtimedwait (128)", sc)
	}
	st, err := os.Stat(proc + "environ")
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		t.Errorf("the holder's /proc/PID/environ belongs to uid %d: it is dumpable", uid)
	}
}
