package integration

import (
	"fmt"
	"strings"
	"testing"
)

// /etc/resolv.conf and /etc/hosts reached through more than one symlink (Debian's
// /var/run -> /run, a relative link through /var/run, a ".." through a directory of
// /run, a link to a link, a symlinked directory in /run, NixOS's /etc/static chain) are
// readable inside, and nothing beside the target file is shown (attack review 13, F4).
func TestResolverFileLinkChains(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		marker := "gosbx-it-" + s.id
		script := fmt.Sprintf(`B=$1; shift
mkdir -p "$B/etc" "$B/store" && mount -t tmpfs gosbx-it-etc "$B/etc" || exit 77
cp -a /etc/. "$B/etc/" || exit 77
mount --bind "$B/etc" /etc || exit 77
mount -t tmpfs gosbx-it-run /run || exit 77
[ -L /var/run ] && [ "$(readlink -f /var/run)" = /run ] || { echo "/var/run is not a link to /run here" >&2; exit 77; }
mkdir -p /run/resolvconf /run/systemd/resolve
echo "nameserver 127.0.0.53 # %[1]s" > /run/systemd/resolve/stub-resolv.conf
echo "nameserver 127.0.0.53 # %[1]s" > /run/resolvconf/resolv.conf
echo "beside-the-target" > /run/systemd/resolve/other
ln -s ../systemd/resolve/stub-resolv.conf /run/resolvconf/chain.conf
ln -s /run/systemd/resolve /run/rdir
for target in /var/run/resolvconf/resolv.conf ../var/run/resolvconf/resolv.conf \
    /run/resolvconf/../systemd/resolve/stub-resolv.conf /run/resolvconf/chain.conf /run/rdir/stub-resolv.conf; do
  rm -f /etc/resolv.conf; ln -s "$target" /etc/resolv.conf
  out=$("$@" exec --workspace %[2]s --net host -- /bin/cat /etc/resolv.conf </dev/null 2>&1)
  echo "CASE $target RC $? $out" | tr '\n' ' '; echo
done
rm -f /etc/resolv.conf; ln -s /run/rdir/stub-resolv.conf /etc/resolv.conf
out=$("$@" exec --workspace %[2]s --net host -- /bin/sh -c 'cat /run/systemd/resolve/other 2>&1; ls /run 2>&1' </dev/null 2>&1)
echo "BESIDE $out" | tr '\n' ' '; echo
# NixOS: /etc/hosts -> /etc/static/hosts -> $B/store/abc-etc/etc/hosts -> $B/store/xyz-hosts
mount -t tmpfs gosbx-it-store "$B/store" || exit 77
mkdir -p "$B/store/abc-etc/etc"; printf '127.0.0.1 localhost\n::1 localhost\n# %[1]s\n' > "$B/store/xyz-hosts"
ln -s "$B/store/xyz-hosts" "$B/store/abc-etc/etc/hosts"; ln -s "$B/store/abc-etc/etc" /etc/static
rm -f /etc/hosts; ln -s /etc/static/hosts /etc/hosts
out=$("$@" exec --workspace %[2]s --net none -- /bin/sh -c 'cat /etc/hosts; getent hosts localhost >/dev/null && echo LOCALHOST-OK' </dev/null 2>&1)
echo "NIX RC $? $out" | tr '\n' ' '; echo`, marker, s.ws)
		r := s.inPrivateMountNS(script)
		lines := strings.Split(r.stdout, "\n")
		cases := 0
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "CASE "):
				cases++
				if !strings.Contains(l, " RC 0 ") || !strings.Contains(l, marker) {
					t.Errorf("resolv.conf through a link chain not readable inside: %s", l)
				}
			case strings.HasPrefix(l, "BESIDE "):
				if strings.Contains(l, "beside-the-target") {
					t.Errorf("a file beside the resolver file's target is visible inside: %s", l)
				}
			case strings.HasPrefix(l, "NIX "):
				cases++
				if !strings.Contains(l, " RC 0 ") || !strings.Contains(l, marker) || !strings.Contains(l, "LOCALHOST-OK") {
					t.Errorf("a NixOS-style /etc/hosts chain not readable inside: %s", l)
				}
			}
		}
		if cases != 6 || !strings.Contains(r.stdout, "BESIDE ") {
			t.Fatalf("the probes did not all run:\n%v", r)
		}
	})
}
