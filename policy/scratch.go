package policy

import (
	"fmt"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// shmPath is the sandbox's /dev/shm, a tmpfs of its /dev: a tmpfs entry of the policy
// (or --tmpfs) at this path gives its size and mode rather than a mount of its own.
const shmPath = "/dev/shm"

// unknownMemTotal stands for the host's memory when /proc/meminfo cannot be read.
const unknownMemTotal = 8 << 30

// scratchShare is the part of the host's memory all of a sandbox's scratch tmpfs may
// hold together by default (the kernel's default is half of it for each mount: five
// mounts could pin two and a half times the host's memory).
const scratchShare = 2

// checkTmpfsSize refuses a size that does not parse or is zero; "" is the default.
func checkTmpfsSize(s string) error {
	if s == "" {
		return nil
	}
	n, err := sizeOf(s, false)
	if err != nil {
		return err
	}
	if n < 4096 {
		return fmt.Errorf("%q: want at least one page (4K)", s)
	}
	return nil
}

// tmpfsFlags applies --tmpfs PATH[:size=SIZE] flags to the policy's tmpfs list: a path
// the list has gets the size; another is a new tmpfs (mode 0755).
func tmpfsFlags(list []Tmpfs, flags []string, cwd string) ([]Tmpfs, error) {
	for _, fl := range flags {
		path, opts, _ := strings.Cut(fl, ":")
		if path == "" {
			return nil, errorf("tmpfs", fl, nil, "want PATH or PATH:size=SIZE")
		}
		var size string
		if opts != "" {
			v, ok := strings.CutPrefix(opts, "size=")
			if !ok || v == "" {
				return nil, errorf("tmpfs", fl, nil, "option %q: want size=SIZE (512M, 2G)", opts)
			}
			if err := checkTmpfsSize(v); err != nil {
				return nil, errorf("tmpfs", fl, nil, "size %v", err)
			}
			size = v
		}
		path = absFrom(path, cwd)
		found := false
		for i := range list {
			if list[i].Path == path {
				found = true
				if size != "" {
					list[i].Size = size
				}
			}
		}
		if !found {
			list = append(list, Tmpfs{Path: path, Size: size})
		}
	}
	return list, nil
}

// sizeScratch sets size= on each tmpfs scratch mount of mounts (those of the policy's
// list, and /dev/shm): the size asked for, else an equal share of 1/scratchShare of the
// host's memory (memTotal bytes) among those of no size asked for, and no more than the
// memory limit of res
// when it has one (a tmpfs page is charged to the memory cgroup of the process that
// writes it, so the limit bounds their sum too). The sizes are in bytes (tmpfs(5)).
// Each gets nr_inodes= in proportion to its size (scratchInodes): the inodes' kernel
// memory is not counted by size=.
func sizeScratch(mounts []specs.Mount, list []Tmpfs, home, policyHome string, res *Resources, memTotal int64) error {
	asked := map[string]Tmpfs{}
	for _, t := range list {
		dst := t.Path
		if dst == policyHome {
			dst = home
		}
		if _, ok := asked[dst]; !ok {
			asked[dst] = t
		}
	}
	var scratch []int
	shares := 0 // the mounts of the default size
	for i, m := range mounts {
		if m.Type != "tmpfs" {
			continue
		}
		if t, ok := asked[m.Destination]; ok || m.Destination == shmPath {
			scratch = append(scratch, i)
			if t.Size == "" {
				shares++
			}
		}
	}
	if shares == 0 {
		shares = 1
	}
	if memTotal <= 0 {
		memTotal = unknownMemTotal
	}
	def := memTotal / scratchShare / int64(shares)
	if res != nil {
		if mem, _ := sizeOf(res.Memory, false); mem > 0 && mem < def {
			def = mem
		}
	}
	def = (def + 4095) &^ 4095
	for _, i := range scratch {
		m := &mounts[i]
		size := def
		t := asked[m.Destination]
		if t.Size != "" {
			n, err := sizeOf(t.Size, false)
			if err != nil {
				return errorf("tmpfs", t.Path, nil, "size %q: %v", t.Size, err)
			}
			size = n
		}
		opts := make([]string, 0, len(m.Options)+1)
		for _, o := range m.Options {
			if strings.HasPrefix(o, "mode=") && t.Mode != "" && m.Destination == shmPath {
				o = "mode=" + t.Mode
			}
			opts = append(opts, o)
		}
		m.Options = append(opts, "size="+strconv.FormatInt(size, 10), "nr_inodes="+strconv.FormatInt(scratchInodes(size), 10))
	}
	return nil
}

// inodeBytes is the scratch size that buys one inode, and minInodes the least a
// scratch tmpfs gets: a tmpfs inode costs about 1 KiB of unreclaimable kernel memory
// (shmem_inode_cache and its dentry; measured: 300,000 empty files raised SUnreclaim
// by 250 MB) that size= does not count, and the kernel's default nr_inodes is half
// the host's pages for every mount. One inode per 4 KiB keeps that memory under a
// quarter of the size.
const (
	inodeBytes = 4096
	minInodes  = 1024
)

// scratchInodes is the nr_inodes of a scratch tmpfs of size bytes (tmpfs(5)).
func scratchInodes(size int64) int64 {
	return max(size/inodeBytes, minInodes)
}

// memTotal is the host's memory in bytes (sysinfo(2) totalram, /proc/meminfo's
// MemTotal); 0 when it cannot be read.
func memTotal() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
