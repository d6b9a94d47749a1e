package cleanup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A journal directory inside a writable tree is refused however the tree is named
// (through a symlink to it, or the journal directory through one); one beside it is not.
func TestCheckOutside(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	rt := filepath.Join(ws, ".rt")
	if err := os.MkdirAll(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "ws-link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(link, ".rt"))
	for _, tree := range []string{ws, link, base} {
		if err := CheckOutside([]string{tree}); err == nil || !strings.Contains(err.Error(), "which the sandbox can write") {
			t.Errorf("writable %s: %v", tree, err)
		}
	}
	if err := CheckOutside([]string{filepath.Join(base, "other")}); err != nil {
		t.Errorf("a tree beside it: %v", err)
	}
}

// A journal is carried out only with its seal, byte for byte; one rewritten after
// BeginJournal is refused and removed, its entries not carried out.
func TestJournalSeal(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt := filepath.Join(base, "rt")
	ws := filepath.Join(base, "ws")
	for _, d := range []string{rt, ws} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	victim := filepath.Join(ws, "planted")
	for i, tamper := range []bool{false, true} {
		// an empty directory (a mount point): what a replay still removes
		if err := os.Mkdir(victim, 0o700); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		// initPid: a process that is gone by the time the journal is completed
		j, err := BeginJournal([]Entry{{Kind: RemoveIfCreated, Path: victim}, {Kind: RemoveIfCreated, Path: "/elsewhere"}}, os.Getpid(), []string{ws})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(j.Done)
		b, err := os.ReadFile(j.path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "/elsewhere") {
			t.Errorf("an entry outside the writable trees was journaled: %s", b)
		}
		// as if this process were gone: its pid 0 in the journal, the seal and their name
		asGone(t, j)
		for _, p := range []string{j.path, j.seal} {
			s := strings.ReplaceAll(string(b), `"pid":`+strconv.Itoa(os.Getpid()), `"pid":0`)
			if tamper && p == j.path {
				s = strings.Replace(s, victim, filepath.Join(ws, "other"), 1)
			}
			if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		removed, failed, err := CompleteJournals(nil)
		_, statErr := os.Lstat(victim)
		switch {
		case err != nil:
			t.Fatalf("%d: %v", i, err)
		case !tamper && (statErr == nil || len(removed) != 1):
			t.Errorf("a sealed journal was not carried out: %v %v", removed, failed)
		case tamper && (statErr != nil || len(failed) != 1 || !strings.Contains(failed[0], "different content")):
			t.Errorf("a rewritten journal: removed %v, failed %v, victim %v", removed, failed, statErr)
		}
		if _, err := os.Lstat(j.path); err == nil {
			t.Errorf("%d: the journal was left", i)
		}
	}
}

// A journal its own launch removes (Done) between another launch's listing and its
// reading is no failure: nothing is reported, nothing done (concurrent launches printed
// "refused and removed: no such file or directory"). A journal whose seal alone is gone
// is still refused.
func TestCompleteJournalsRemovedMeanwhile(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt, ws := filepath.Join(base, "rt"), filepath.Join(base, "ws")
	for _, d := range []string{rt, ws} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	// initPid: this process, alive, so only the race decides what happens
	j, err := BeginJournal([]Entry{{Kind: RemoveIfCreated, Path: filepath.Join(ws, "x")}}, os.Getpid(), []string{ws})
	if err != nil {
		t.Fatal(err)
	}
	asGone(t, j) // read, not skipped by its name: its content's owner is alive
	t.Cleanup(func() { testHookListed = nil })
	testHookListed = func([]string) { j.Done() }
	if _, failed, err := CompleteJournals(nil); err != nil || len(failed) != 0 {
		t.Errorf("a journal done meanwhile: failed %v, err %v; want nothing reported", failed, err)
	}
	j, err = BeginJournal([]Entry{{Kind: RemoveIfCreated, Path: filepath.Join(ws, "x")}}, os.Getpid(), []string{ws})
	if err != nil {
		t.Fatal(err)
	}
	asGone(t, j)
	testHookListed = func([]string) { os.Remove(j.seal) }
	if _, failed, _ := CompleteJournals(nil); len(failed) != 1 || !strings.Contains(failed[0], "seal") {
		t.Errorf("a journal without its seal: failed %v, want it refused", failed)
	}
}

// A journal whose launcher was killed is replayed once, against the repository as it is
// now: what the user made since in a path the command could have created (a later git
// rebase -i's rebase-merge, a fetched remote-tracking ref) stays and is reported as not
// completed; what stays true whoever made it (a symlink in a git dir) is removed; the
// journal is gone after that one replay, whatever it reported (attack review 31 F2).
func TestJournalReplayOnce(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt, ws := filepath.Join(base, "rt"), filepath.Join(base, "ws")
	gd := filepath.Join(ws, ".git")
	rebase := filepath.Join(gd, "rebase-merge")
	remotes := filepath.Join(gd, "refs", "remotes")
	modules := filepath.Join(gd, "modules")
	for _, d := range []string{rt, rebase, filepath.Join(remotes, "origin"), filepath.Join(modules, "a")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	entries := []Entry{
		{Kind: RemoveIfCreated, Path: rebase},
		{Kind: RemoveChangedRefs, Path: remotes},
		{Kind: RemoveSpecialUnder, Path: gd},
		// as at launch (the init did the cleanup): nothing to report
		{Kind: RemoveNewEntries, Path: modules, Keep: []string{"a"}},
	}
	j, err := BeginJournal(entries, os.Getpid(), []string{ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.Done)
	// since the launch: the user's rebase stops, a fetch moves a ref; a link is planted
	todo := filepath.Join(rebase, "git-rebase-todo")
	fetched := filepath.Join(remotes, "origin", "main")
	link := filepath.Join(gd, "link")
	for _, f := range []string{todo, fetched} {
		if err := os.WriteFile(f, []byte("user's\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	removed, failed := replayAsGone(t, j)
	for _, f := range []string{todo, fetched} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the replay removed the user's later %s: %v (removed %v)", f, err, removed)
		}
	}
	if _, err := os.Lstat(link); err == nil {
		t.Errorf("the symlink in the git dir was left: removed %v", removed)
	}
	joined := strings.Join(failed, "\n")
	for _, p := range []string{rebase, remotes} {
		if !strings.Contains(joined, p+": not completed") {
			t.Errorf("%s is not reported as not completed: %v", p, failed)
		}
	}
	if strings.Contains(joined, modules) {
		t.Errorf("a directory as at launch is reported: %v", failed)
	}
	if _, err := os.Lstat(j.path); err == nil {
		t.Error("the journal was kept after its replay")
	}
	if removed, failed, _ := CompleteJournals(nil); len(removed)+len(failed) != 0 {
		t.Errorf("a second launch replayed again: removed %v, failed %v", removed, failed)
	}
}

// replayAsGone makes j a journal whose launcher and init are gone (pid 0, which no
// process has: in its name and its record, the seal alike) and completes the journals.
func replayAsGone(t *testing.T, j *Journal) (removed, failed []string) {
	t.Helper()
	b, err := os.ReadFile(j.path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), `"pid":`+strconv.Itoa(os.Getpid()), `"pid":0`)
	asGone(t, j)
	for _, p := range []string{j.path, j.seal} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, failed, err = CompleteJournals(nil)
	if err != nil {
		t.Fatal(err)
	}
	return removed, failed
}

// asGone renames j's journal and seal as a launcher that is gone would have named them
// (pid 0, which no process has), so that CompleteJournals reads them.
func asGone(t *testing.T, j *Journal) {
	t.Helper()
	name := "0-0-" + strconv.FormatUint(journalSeq.Add(1), 10) + ".json"
	for _, p := range []*string{&j.path, &j.seal} {
		to := filepath.Join(filepath.Dir(*p), name)
		if err := os.Rename(*p, to); err != nil {
			t.Fatal(err)
		}
		*p = to
	}
}

// A journal whose name names a launcher that still runs is not read, however it is
// made (here: neither JSON nor sealed): nothing is done or reported while that process
// runs; once it is gone, the journal is read and refused as before, and removed.
func TestCompleteJournalsOwnerAlive(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt, ws := filepath.Join(base, "rt"), filepath.Join(base, "ws")
	for _, d := range []string{rt, ws} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	// the journal directory, as a launch makes it
	j, err := BeginJournal([]Entry{{Kind: RemoveIfCreated, Path: filepath.Join(ws, "x")}}, os.Getpid(), []string{ws})
	if err != nil {
		t.Fatal(err)
	}
	j.Done()
	owner := exec.Command("sleep", "60")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	o, err := procOf(owner.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(filepath.Dir(j.path), fmt.Sprintf("%d-%d-1.json", o.Pid, o.Start))
	if err := os.WriteFile(path, []byte("not a journal"), 0o600); err != nil {
		t.Fatal(err)
	}
	if removed, failed, err := CompleteJournals(nil); err != nil || len(removed)+len(failed) != 0 {
		t.Errorf("while its launcher runs: removed %v, failed %v, err %v; want nothing", removed, failed, err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("the journal of a running launcher was removed: %v", err)
	}
	owner.Process.Kill()
	owner.Wait()
	_, failed, err := CompleteJournals(nil)
	if err != nil || len(failed) != 1 || !strings.Contains(failed[0], "refused and removed") {
		t.Errorf("once its launcher is gone: failed %v, err %v; want it refused", failed, err)
	}
	if _, err := os.Lstat(path); err == nil {
		t.Error("the refused journal was left")
	}
}

// ownerOfName reads only BeginJournal's names.
func TestOwnerOfName(t *testing.T) {
	for name, want := range map[string]bool{
		"12-345-6.json": true, "12-345-6.json.tmp": false, "12-345.json": false, "0-1-2.json": false,
		"-1-2-3.json": false, "a-1-2.json": false, "1-b-2.json": false, "1-2-c.json": false, "1-2-3-4.json": false,
	} {
		if _, ok := ownerOfName(name); ok != want {
			t.Errorf("ownerOfName(%q): %v, want %v", name, ok, want)
		}
	}
	if p, _ := ownerOfName("12-345-6.json"); p != (proc{Pid: 12, Start: 345}) {
		t.Errorf("ownerOfName: %+v", p)
	}
}

// readProcStat reads what os.ReadFile reads, and fails as it does.
func TestReadProcStat(t *testing.T) {
	for _, name := range []string{"/proc/self/stat", "/proc/1/stat", "/proc/self/mountinfo", "/proc/0/stat", "/nonexistent"} {
		want, werr := os.ReadFile(name)
		got, gerr := readProcStat(name)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%s: error %v, want %v", name, gerr, werr)
			continue
		}
		// self's stat changes between reads (times): compare what stays
		if name == "/proc/self/stat" {
			want, got = want[:strings.IndexByte(string(want), ')')], got[:strings.IndexByte(string(got), ')')]
		}
		if name != "/proc/1/stat" && string(got) != string(want) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
