package policy

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gosbx/gosbx/internal/namehash"
)

// Cache is a workspace's own cache directory on the host: Base/Rel/ID, whose "cache"
// subdirectory (Source) is bound read-write as the sandbox's ~/.cache, and whose
// metadata file (CacheMetaName, beside it, out of every sandbox's reach) names the
// workspace. One per user and workspace: a sandbox never sees another workspace's
// cache, so it cannot poison that workspace's builds.
type Cache struct {
	// Base is the directory the cache hangs from, trusted as the caller's own:
	// $XDG_CACHE_HOME, or $HOME (each with its symlinks followed, canonical).
	Base string
	// Rel is the cache root below Base, "gosbx" or ".cache/gosbx": its components are
	// never followed when they are symlinks (Prepare).
	Rel string
	// ID names the workspace's entry: see WorkspaceID.
	ID string
	// Workspace is the canonical workspace.
	Workspace string
	// UID owns every directory from Base down.
	UID int
}

// CacheMetaName is the metadata file in each entry (JSON: workspace, id), written by
// gosbx and only shown by `cache ls`: deletion never trusts it.
const CacheMetaName = "workspace.json"

// Root is the cache root, Base/Rel.
func (c *Cache) Root() string { return filepath.Join(c.Base, c.Rel) }

// Dir is the workspace's entry, Root/ID.
func (c *Cache) Dir() string { return filepath.Join(c.Root(), c.ID) }

// Source is what the sandbox sees as ~/.cache: Dir/cache.
func (c *Cache) Source() string { return filepath.Join(c.Dir(), "cache") }

// errCacheUnavailable is a host where the caller has no cache directory of its own
// (no HOME, or one it does not own): the profile's cache is off there, --cache fails.
var errCacheUnavailable = errors.New("no cache directory")

// CacheRoot returns the caller's cache root as a Cache without ID or Workspace:
// $XDG_CACHE_HOME/gosbx when XDG_CACHE_HOME is absolute (the XDG Base Directory
// specification), else $HOME/.cache/gosbx. Base must exist and belong to the caller;
// an error wraps errCacheUnavailable and names the fix.
func CacheRoot(h Host) (*Cache, error) {
	fix := "set XDG_CACHE_HOME to a directory you own, or use --no-cache"
	base, rel, what := "", "", ""
	if x := lookupEnv(h.Environ, "XDG_CACHE_HOME"); filepath.IsAbs(x) {
		base, rel, what = x, "gosbx", "XDG_CACHE_HOME "
	} else {
		base, rel, what = h.Home, filepath.Join(".cache", "gosbx"), "HOME "
		if !filepath.IsAbs(base) || filepath.Clean(base) == "/" {
			return nil, fmt.Errorf("%w for uid %d: HOME is %q: %s", errCacheUnavailable, h.UID, base, fix)
		}
	}
	canon, err := filepath.EvalSymlinks(base)
	if err != nil {
		return nil, fmt.Errorf("%w for uid %d: %s%s: %v: %s", errCacheUnavailable, h.UID, what, base, err, fix)
	}
	st, err := os.Stat(canon)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w for uid %d: %s%s is not a directory: %s", errCacheUnavailable, h.UID, what, base, fix)
	}
	if o, ok := statOwner(st); !ok || o[0] != h.UID {
		return nil, fmt.Errorf("%w for uid %d: %s%s belongs to uid %d, not to you: %s", errCacheUnavailable, h.UID, what, base, o[0], fix)
	}
	return &Cache{Base: canon, Rel: rel, UID: h.UID}, nil
}

// WorkspaceID names a workspace's cache entry: its base name (letters, digits, '.',
// '_', '-'; at most 32 bytes) for people, then 16 hex digits of SHA-256 over its
// canonical path, device and inode number. A directory removed and made again at the
// same path (another clone, another owner's project) gets a fresh cache, not the old
// one's. ws must be canonical and exist.
func WorkspaceID(ws string) (string, error) {
	st, err := os.Stat(ws)
	if err != nil {
		return "", fmt.Errorf("workspace id of %s: %w", ws, err)
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("workspace id of %s: no device and inode", ws)
	}
	sum := namehash.Sum256([]byte(ws + "\x00" + strconv.FormatUint(s.Dev, 10) + "\x00" + strconv.FormatUint(s.Ino, 10)))
	name := []byte(filepath.Base(ws))
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			name[i] = '_'
		}
	}
	if len(name) > 32 {
		name = name[:32]
	}
	if len(name) == 0 || name[0] == '.' {
		name = append([]byte("ws"), name...)
	}
	return string(name) + "-" + hex.EncodeToString(sum[:8]), nil
}

// ValidCacheID reports whether id can name an entry: one path component of the
// characters WorkspaceID uses, not "." or "..".
func ValidCacheID(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// cacheFor decides the cache of a launch (Effective): --cache/--no-cache over the
// policy's filesystem.cache. --cache is a read-write bind, refused where the policy
// allows none (filesystem.allow_extra_read_write) unless it has the cache itself. A
// host without a cache directory of the caller's turns the policy's cache off (with a
// note: a cache is speed, not isolation) and fails --cache.
func cacheFor(p *Policy, o Options, h Host, ws string) error {
	f := &p.Filesystem
	on := f.Cache != nil && *f.Cache
	asked := o.Cache != nil && *o.Cache
	if asked && !on && !allowed(f.AllowExtraReadWrite) {
		return errorf("cache", "", nil, "the policy does not allow extra read-write binds (filesystem.allow_extra_read_write), and --cache is one")
	}
	if o.Cache != nil {
		on = *o.Cache
	}
	f.Cache = nil // printed (policy show) only when on
	if !on {
		return nil
	}
	c, err := CacheRoot(h)
	if err != nil {
		if asked {
			return errorf("cache", "", err, "cannot have a cache")
		}
		p.cacheNote = "running without a cache: " + err.Error()
		return nil
	}
	if c.ID, err = WorkspaceID(ws); err != nil {
		return errorf("cache", ws, err, "cannot name the workspace's cache")
	}
	c.Workspace = ws
	p.cache = c
	f.Cache = &on
	return nil
}

// CacheDir is the launch's cache (nil when off); Prepare makes it before the launch.
func (p *Policy) CacheDir() *Cache { return p.cache }

// CacheNote says why the policy's cache is off on this host ("" when it is not).
func (p *Policy) CacheNote() string { return p.cacheNote }

// cacheVars are the variables pointed into the cache (below ~/.cache inside), unless
// the policy sets them (build keeps GOMODCACHE on the host's read-only module cache:
// with GOPROXY=off an empty one could fetch nothing). Build outputs only: cargo's
// target directory already lives in the workspace (./target, as warm and in the same
// trust domain), and CARGO_HOME holds the host's registry in build.
var cacheVars = [][2]string{{"XDG_CACHE_HOME", ""}, {"GOCACHE", "go-build"}, {"GOMODCACHE", "go-mod"},
	{"PIP_CACHE_DIR", "pip"}, {"npm_config_cache", "npm"}}

// bindCache adds the cache's bind at home/.cache (Build). It is refused when the cache
// root and a writable tree hold one another (a sandbox could write other workspaces'
// caches, or its cache would be a workspace), when the policy file lies in it, where a
// read-write bind would be refused, and where another mount would cover or sit inside
// ~/.cache.
func (b *builder) bindCache(c *Cache, home string, trees []string, p *Policy, h Host) error {
	root, dst := c.Root(), filepath.Join(home, ".cache")
	for _, t := range trees {
		if under(root, t) || under(t, root) {
			return errorf("cache", root, nil, "the cache root and the writable tree %s hold one another: a sandbox could write other workspaces' caches; set XDG_CACHE_HOME outside it, or use --no-cache", t)
		}
	}
	if p.source != "" && under(p.source, root) {
		return errorf("policy", p.source, nil, "the policy file lies in the cache root %s, which sandboxes write", root)
	}
	if err := writable("cache", c.Source(), h, p.Filesystem.Credentials); err != nil {
		return err
	}
	for i, m := range b.mounts {
		if (m.Type == "bind" && under(dst, m.Destination)) || (m.Destination != dst && under(m.Destination, dst)) || m.Destination == dst {
			return errorf("cache", dst, nil, "is the workspace's cache inside, but %s is %s there; bind it elsewhere, or use --no-cache (or --toolchain none for a toolchain there)", m.Destination, b.origins[i])
		}
	}
	b.origin = "the workspace's cache (--cache)"
	b.bind(c.Source(), dst, false)
	return nil
}

func lookupEnv(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
}
