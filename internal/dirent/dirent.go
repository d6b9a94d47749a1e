// Package dirent lists a directory with getdents64(2) into a caller's buffer, without a
// string or an os.DirEntry per entry: for the listings made on every launch and by idle
// processes (the lock directory, /proc, the policy's tree walks), whose garbage an idle
// process would keep (docs/decisions.md, "Memory: idle sessions").
package dirent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// nameOff is the offset of d_name in struct linux_dirent64: d_ino u64, d_off s64,
// d_reclen u16, d_type u8, then the NUL-terminated name (getdents64(2)).
const nameOff = 19

// ErrStop, returned by fn, ends Each early with a nil error.
var ErrStop = errors.New("stop")

// Each calls fn with the name (valid only during the call) and the d_type
// (unix.DT_UNKNOWN where the file system gives none) of each entry of the open
// directory fd but "." and "..", in getdents64(2) order, from fd's current offset,
// reading into buf (a few KiB: a record is at most 280 bytes). It returns getdents64's
// error (EINTR retried), an error for a record that does not fit in what was read, or
// fn's error (nil for ErrStop).
func Each(fd int, buf []byte, fn func(name []byte, typ uint8) error) error {
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("getdents64: %w", err)
		}
		if n <= 0 {
			return nil
		}
		for b := buf[:n]; len(b) > 0; {
			if len(b) < nameOff {
				return fmt.Errorf("getdents64: a record of %d bytes left", len(b))
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < nameOff || reclen > len(b) {
				return fmt.Errorf("getdents64: a record of %d bytes", reclen)
			}
			rec := b[:reclen]
			b = b[reclen:]
			name := rec[nameOff:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if string(name) == "." || string(name) == ".." {
				continue
			}
			if err := fn(name, rec[18]); err != nil {
				if err == ErrStop {
					return nil
				}
				return err
			}
		}
	}
}
