package prefault

// findMapping returns the range of the readable and writable mapping holding addr in a
// /proc/self/maps text ("lo-hi perms offset dev inode [path]" a line, proc(5)).
func findMapping(maps []byte, addr uint64) (lo, hi uint64, ok bool) {
	for len(maps) > 0 {
		e := 0
		for e < len(maps) && maps[e] != '\n' {
			e++
		}
		line := maps[:e]
		if e < len(maps) {
			maps = maps[e+1:]
		} else {
			maps = nil
		}
		l, h, perms, ok := parseLine(line)
		if ok && addr >= l && addr < h {
			return l, h, perms[0] == 'r' && perms[1] == 'w'
		}
	}
	return 0, 0, false
}

// parseLine reads a maps line's range and permissions.
func parseLine(l []byte) (lo, hi uint64, perms []byte, ok bool) {
	lo, i := hexPrefix(l)
	if i == 0 || i >= len(l) || l[i] != '-' {
		return 0, 0, nil, false
	}
	l = l[i+1:]
	hi, i = hexPrefix(l)
	if i == 0 || i >= len(l) || l[i] != ' ' || hi <= lo {
		return 0, 0, nil, false
	}
	l = l[i+1:]
	if len(l) < 4 {
		return 0, 0, nil, false
	}
	return lo, hi, l[:4], true
}

// hexPrefix reads up to 16 lower-case hex digits.
func hexPrefix(b []byte) (uint64, int) {
	var v uint64
	i := 0
	for ; i < len(b) && i < 16; i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return v, i
		}
	}
	return v, i
}

// isOneShotExec reports whether a NUL-separated command line (proc(5) cmdline) is
// `PROG exec …` with no --session or --session=… among the words before `--`.
func isOneShotExec(cmdline []byte) bool {
	word := 0
	for len(cmdline) > 0 {
		e := 0
		for e < len(cmdline) && cmdline[e] != 0 {
			e++
		}
		w := cmdline[:e]
		switch {
		case word == 1 && string(w) != "exec":
			return false
		case word > 1 && string(w) == "--":
			return true
		case word > 1 && (string(w) == "--session" || len(w) > 10 && string(w[:10]) == "--session="):
			return false
		}
		word++
		if e < len(cmdline) {
			cmdline = cmdline[e+1:]
		} else {
			cmdline = nil
		}
	}
	return word > 1
}
