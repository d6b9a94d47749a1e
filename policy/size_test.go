package policy

import "testing"

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"1048576", 1 << 20}, {"512M", 512 << 20}, {"512m", 512 << 20}, {"2G", 2 << 30},
		{"2g", 2 << 30}, {"2GB", 2 << 30}, {"2GiB", 2 << 30}, {"2gib", 2 << 30}, {"64 kb", 64 << 10},
		{"1.5G", 3 << 29}, {"4k", 4096}, {"1t", 1 << 40}, {"1p", 1 << 50}, {"10b", 10}, {"10B", 10},
	} {
		if got, err := parseSize(c.in); err != nil || got != c.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "M", "-1", "1x", "1MM", "1 M B", ".5G", "5.G", "1..2", "1.2.3", "1  M", "0x10",
		"8192P", "99999999999999999999"} {
		if got, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) = %d; want an error", bad, got)
		}
	}
}
