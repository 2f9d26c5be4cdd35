package netguard

import (
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// ParseHost parses the numeric spellings of an address that browsers and
// the C library accept, and reports whether host was one:
//
//   - IPv4 with inet_aton semantics: one to four parts, each decimal, hex
//     (0x7f) or octal (0177), the last part filling the remaining bytes
//     (2130706433, 0x7f000001, 017700000001, 127.1, 127.0.1, 0x7f.0.0.1);
//   - IPv6, bracketed or not, with or without a zone (%eth0 or %25eth0),
//     including embedded IPv4 (::ffff:127.0.0.1);
//   - one trailing dot, upper-case letters, and non-ASCII spellings that
//     IDNA maps to ASCII (full-width digits, ideographic full stops).
//
// Names (example.com, localhost) are not numeric: ParseHost returns false
// for them, and so it does for anything it cannot read as exactly one
// address.
func ParseHost(host string) (netip.Addr, bool) {
	h, err := normalizeHost(host)
	if err != nil || h == "" {
		return netip.Addr{}, false
	}
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return netip.Addr{}, false
		}
		h = h[1 : len(h)-1]
		if !strings.Contains(h, ":") {
			return netip.Addr{}, false
		}
	}
	if strings.Contains(h, ":") {
		return parseIPv6(h)
	}
	h = strings.TrimSuffix(h, ".")
	return parseIPv4Loose(h)
}

// parseIPv6 parses an IPv6 literal with an optional zone, which may be
// URL-escaped (%25).
func parseIPv6(h string) (netip.Addr, bool) {
	if i := strings.Index(h, "%25"); i >= 0 {
		h = h[:i] + "%" + h[i+3:]
	}
	a, err := netip.ParseAddr(h)
	if err != nil || !a.Is6() {
		return netip.Addr{}, false
	}
	return a, true
}

// parseIPv4Loose parses an IPv4 address the way inet_aton and the WHATWG URL
// standard do.
func parseIPv4Loose(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseIPv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	n := len(parts)
	for _, v := range vals[:n-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
	}
	last := vals[n-1]
	if last >= uint64(1)<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	var x uint32
	for i, v := range vals[:n-1] {
		x |= uint32(v) << (8 * (3 - i))
	}
	x |= uint32(last)
	return netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)}), true
}

// parseIPv4Number parses one part of a loose IPv4 address: decimal, 0x hex
// (a bare "0x" is zero, as in the URL standard) or 0-prefixed octal.
func parseIPv4Number(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	for i := 0; i < len(p); i++ {
		if !isDigitIn(p[i], base) {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(p, base, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

func isDigitIn(c byte, base int) bool {
	switch base {
	case 8:
		return c >= '0' && c <= '7'
	case 16:
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
	default:
		return c >= '0' && c <= '9'
	}
}

// endsInNumber reports whether a host's last label looks numeric (all
// digits, or 0x followed by hex digits). The URL standard reads such a host
// as an IPv4 address or rejects it; it is never a name.
func endsInNumber(h string) bool {
	h = strings.TrimSuffix(h, ".")
	last := h
	if i := strings.LastIndexByte(h, '.'); i >= 0 {
		last = h[i+1:]
	}
	if last == "" {
		return false
	}
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		for i := 2; i < len(last); i++ {
			if !isDigitIn(last[i], 16) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
	}
	return true
}

// normalizeHost maps a host to the ASCII form that net/http dials: non-ASCII
// hosts go through IDNA (UTS #46 lookup profile, which also maps full-width
// digits and ideographic full stops), then everything is lower-cased.
func normalizeHost(h string) (string, error) {
	if !isASCII(h) {
		a, err := idna.Lookup.ToASCII(h)
		if err != nil {
			return "", err
		}
		h = a
	}
	return strings.ToLower(h), nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// refusedNames are host names that always lead to the machine itself or to
// a cloud metadata service.
var refusedNames = map[string]string{
	"localhost":                  "loopback",
	"localhost.localdomain":      "loopback",
	"localhost6":                 "loopback",
	"localhost6.localdomain6":    "loopback",
	"ip6-localhost":              "loopback",
	"ip6-loopback":               "loopback",
	"metadata":                   "a cloud metadata endpoint",
	"metadata.google.internal":   "a cloud metadata endpoint",
	"metadata.goog":              "a cloud metadata endpoint",
	"instance-data":              "a cloud metadata endpoint",
	"instance-data.ec2.internal": "a cloud metadata endpoint",
}

// refusedName names why a normalised host name (no trailing dot) is refused,
// or returns "".
func refusedName(name string) string {
	if r, ok := refusedNames[name]; ok {
		return r
	}
	if strings.HasSuffix(name, ".localhost") {
		return "loopback"
	}
	return ""
}

// validName reports whether name (normalised, no trailing dot) is a plain DNS
// name: labels of letters, digits, '-' and '_', none empty.
func validName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
