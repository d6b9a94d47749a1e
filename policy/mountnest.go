package policy

// MountTable is the caller's mount table (/proc/thread-self/mountinfo), read once for
// NestsByMount's checks of one launch.
type MountTable struct{ mounts []mountEntry }

// ReadMountTable reads the calling thread's mount table. Errors are the read's or a
// malformed line's (a caller fails closed on them).
func ReadMountTable() (*MountTable, error) {
	m, err := readMountinfo()
	if err != nil {
		return nil, err
	}
	return &MountTable{m}, nil
}

// NestsByMount reports whether a bind of the canonical path src reaches the canonical
// path dir (which need not exist) under names a comparison of the two paths misses: a
// bind mount shows one directory at several paths (mount --bind /run/user/0 /srv/x), so
// src may be dir, hold it or lie in it through another name of it. It compares the
// places (the device in mountinfo and the path from that file system's root) of src
// and dir, and of every mount inside src (a recursive bind takes them along) with dir's.
// via is the path that reaches dir: src or the mount point inside it. ok is false when
// either path is held by no mount of the table.
func (t *MountTable) NestsByMount(src, dir string) (via string, ok bool) {
	dp, found := placeOf(t.mounts, dir)
	if !found {
		return "", false
	}
	if sp, found := placeOf(t.mounts, src); found && sp.dev == dp.dev && (under(sp.path, dp.path) || under(dp.path, sp.path)) {
		return src, true
	}
	for _, m := range t.mounts {
		if m.dev != dp.dev || m.point == src || !under(m.point, src) {
			continue
		}
		if under(m.root, dp.path) || under(dp.path, m.root) {
			return m.point, true
		}
	}
	return "", false
}
