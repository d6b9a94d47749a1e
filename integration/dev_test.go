package integration

import (
	"os"
	"sort"
	"strings"
	"testing"
)

// /dev holds only the minimal set: the expected character devices, ptmx,
// pts, shm and the fd links; no block device, nothing else of the host.
func TestDevMinimal(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		blk := "/dev/shm/gosbx-it-blk-" + s.id
		t.Cleanup(func() { os.Remove(blk) })
		r := s.sh(nil, `for f in /dev/* /dev/.[!.]*; do [ -e "$f" ] || [ -L "$f" ] || continue; printf 'ENT %s %s\n' "$(stat -c %F "$f" | tr ' ' _)" "${f#/dev/}"; done
echo "BLOCK[$(find /dev -type b 2>/dev/null | tr '\n' ' ')]"
echo "NULLDEV $(stat -c '%t:%T' /dev/null)"
echo "SHM[$(ls -A /dev/shm | tr '\n' ' ')]"
echo "PTS[$(ls -A /dev/pts | tr '\n' ' ')]"
for f in /dev/zero /dev/urandom; do head -c 4 $f >/dev/null || echo "UNREADABLE $f"; done
echo x > /dev/null || echo "UNWRITABLE /dev/null"
if (echo x > /dev/full) 2>/dev/null; then echo "FULL-WRITABLE"; fi
if mknod "$1" b 8 0 2>/dev/null; then echo "MKNOD-OK"; fi
exit 0`, blk)
		mustSucceed(t, r, "dev listing")
		const cdev, link, dir = "character_special_file", "symbolic_link", "directory"
		allowed := map[string]string{
			"null": cdev, "zero": cdev, "full": cdev, "random": cdev, "urandom": cdev, "tty": cdev,
			"ptmx": cdev + "|" + link, "pts": dir, "shm": dir,
			"fd": link, "stdin": link, "stdout": link, "stderr": link,
		}
		seen := map[string]bool{}
		var extra []string
		for _, l := range strings.Split(r.stdout, "\n") {
			f := strings.Fields(l)
			if len(f) != 3 || f[0] != "ENT" {
				continue
			}
			typ, name := f[1], f[2]
			want, known := allowed[name]
			if !known {
				extra = append(extra, l)
				continue
			}
			seen[name] = true
			if !strings.Contains("|"+want+"|", "|"+typ+"|") {
				t.Errorf("/dev/%s has type %q, want one of %q", name, typ, want)
			}
		}
		sort.Strings(extra)
		if len(extra) > 0 {
			t.Errorf("unexpected entries in /dev: %v", extra)
		}
		for name := range allowed {
			if !seen[name] {
				t.Errorf("/dev/%s is missing", name)
			}
		}
		for _, bad := range []string{"UNREADABLE", "UNWRITABLE", "FULL-WRITABLE", "MKNOD-OK"} {
			if strings.Contains(r.stdout, bad) {
				t.Errorf("/dev misbehaves (%s):\n%s", bad, r.stdout)
			}
		}
		if !strings.Contains(r.stdout, "BLOCK[]") {
			t.Errorf("block devices inside /dev:\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, "NULLDEV 1:3") {
			t.Errorf("/dev/null is not the null device:\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, "SHM[]") {
			t.Errorf("/dev/shm is not empty and private:\n%s", r.stdout)
		}
	})
}
