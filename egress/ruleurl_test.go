package egress

import (
	"strings"
	"testing"
)

// A URL given as a host pattern is refused with the pattern to give instead (the
// trial's finding: "https://pypi.org/simple" was read as host "https", port
// "//pypi.org/simple"); patterns that are not URLs parse as before.
func TestParseRuleURL(t *testing.T) {
	for s, give := range map[string]string{
		"https://pypi.org/simple":             "give pypi.org",
		"https://PyPI.org:443/simple/":        "give pypi.org",
		"http://user:pw@example.com:8080/x?q": "give example.com:8080",
		"git+ssh://git@github.com/o/r":        "give github.com",
		"http://[fd00::1]:8443/":              "give [fd00::1]:8443",
		"http://[fd00::1]:80/":                "give [fd00::1]",
		"pypi.org/simple":                     "give pypi.org",
		"pypi.org:8443/simple":                "give pypi.org:8443",
		"file:///srv/x":                       "give the host name",
	} {
		_, err := ParseRule(s)
		if err == nil || !strings.Contains(err.Error(), "is a URL") || !strings.HasSuffix(err.Error(), give) {
			t.Errorf("ParseRule(%q): %v; want a URL refusal ending %q", s, err, give)
		}
	}
	for _, s := range []string{"pypi.org", "*.example.com:*", "10.0.0.0/8", "10.0.0.0/8:443", "fd00::/8", "[fd00::1]:8443", "localhost:8080", "fd00::1"} {
		if _, err := ParseRule(s); err != nil {
			t.Errorf("ParseRule(%q): %v; want it parsed", s, err)
		}
	}
}
