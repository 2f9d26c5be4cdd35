package netguard

import (
	"errors"
	"fmt"
	"net/netip"
)

// Sentinel errors. Callers branch on them with errors.Is; the concrete
// errors carry the detail.
var (
	// ErrRefused means an address (or a URL or name that leads to one) lies in
	// a range agents may not reach: loopback, private, link-local, metadata,
	// reserved, or an IPv6 form that embeds one of those.
	ErrRefused = errors.New("address refused")
	// ErrScheme means a URL's scheme is not http or https.
	ErrScheme = errors.New("scheme not allowed")
	// ErrInvalidURL means a URL could not be parsed unambiguously.
	ErrInvalidURL = errors.New("invalid URL")
	// ErrInvalidHost means a host could not be parsed unambiguously.
	ErrInvalidHost = errors.New("invalid host")
	// ErrUserinfo means a URL carries user:password@ before its host.
	ErrUserinfo = errors.New("credentials in URL refused")
	// ErrTooManyRedirects means a redirect chain went past the limit.
	ErrTooManyRedirects = errors.New("too many redirects")
	// ErrBodyTooLarge means a response body went past the size cap.
	ErrBodyTooLarge = errors.New("response body too large")
	// ErrPolicy means a Policy entry could not be understood.
	ErrPolicy = errors.New("invalid net policy")
)

// RefusedError says which address was refused and why. It unwraps to
// ErrRefused.
type RefusedError struct {
	Addr  netip.Addr // the address as given (zone dropped)
	Range string     // a short name of the range, e.g. "loopback"
	Host  string     // the host name that led to Addr, when there was one
}

// Error implements error.
func (e *RefusedError) Error() string {
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("host %q resolves to %s, which is %s: refused", e.Host, e.Addr, e.Range)
	}
	return fmt.Sprintf("address %s is %s: refused", e.Addr, e.Range)
}

// Unwrap returns ErrRefused.
func (e *RefusedError) Unwrap() error { return ErrRefused }

type namedRange struct {
	prefix netip.Prefix
	name   string
}

func mustRanges(pairs ...string) []namedRange {
	out := make([]namedRange, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, namedRange{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

// refused4 lists the IPv4 ranges agents may not reach. More specific entries
// come first so that the reported name is the most telling one.
var refused4 = mustRanges(
	"169.254.169.254/32", "a cloud metadata endpoint",
	"100.100.100.200/32", "a cloud metadata endpoint",
	"168.63.129.16/32", "a cloud platform endpoint",
	"255.255.255.255/32", "the broadcast address",
	"0.0.0.0/8", "unspecified (this network)",
	"10.0.0.0/8", "private (RFC 1918)",
	"100.64.0.0/10", "shared address space (CGNAT, RFC 6598)",
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link-local",
	"172.16.0.0/12", "private (RFC 1918)",
	"192.0.0.0/24", "IETF protocol assignments",
	"192.0.2.0/24", "documentation (TEST-NET-1)",
	"192.88.99.0/24", "6to4 relay anycast",
	"192.168.0.0/16", "private (RFC 1918)",
	"198.18.0.0/15", "benchmarking",
	"198.51.100.0/24", "documentation (TEST-NET-2)",
	"203.0.113.0/24", "documentation (TEST-NET-3)",
	"224.0.0.0/4", "multicast",
	"240.0.0.0/4", "reserved",
)

// refused6 lists IPv6 ranges refused outright, checked before the rule that
// anything outside global unicast (2000::/3) is refused.
var refused6 = mustRanges(
	"::/128", "unspecified",
	"::1/128", "loopback",
	"::/96", "IPv4-compatible IPv6 (deprecated)",
	"::ffff:0:0:0/96", "IPv4-translated IPv6",
	"64:ff9b:1::/48", "local-use NAT64",
	"100::/64", "discard-only",
	"2001::/32", "Teredo",
	"2001:2::/48", "benchmarking",
	"2001:10::/28", "ORCHID",
	"2001:20::/28", "ORCHIDv2",
	"2001:db8::/32", "documentation",
	"3fff::/20", "documentation",
	"fd00:ec2::254/128", "a cloud metadata endpoint",
	"fc00::/7", "unique-local",
	"fe80::/10", "link-local",
	"fec0::/10", "site-local (deprecated)",
	"ff00::/8", "multicast",
)

var (
	nat64Prefix    = netip.MustParsePrefix("64:ff9b::/96")
	sixToFourPrefx = netip.MustParsePrefix("2002::/16")
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
)

// CheckIP returns nil when ip may be reached by an agent, and a *RefusedError
// (unwrapping to ErrRefused) otherwise. An address inside one of the allow
// prefixes is always permitted: that is how an operator opens a private range.
//
// Refused: loopback, unspecified, RFC 1918 private, CGNAT 100.64/10,
// link-local (including the 169.254.169.254 metadata endpoint), IETF,
// documentation, benchmarking and reserved ranges, multicast, broadcast,
// IPv6 unique-local, link-local, site-local, multicast, Teredo, any IPv6
// outside global unicast, and IPv6 forms that embed a refused IPv4 address
// (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16). An invalid
// address is refused.
func CheckIP(ip netip.Addr, allow ...netip.Prefix) error {
	if !ip.IsValid() {
		return &RefusedError{Addr: ip, Range: "not a valid address"}
	}
	ip = ip.WithZone("")
	for _, p := range allow {
		if p.Contains(ip) || (ip.Is4In6() && p.Contains(ip.Unmap())) {
			return nil
		}
	}
	if name := refusedRange(ip); name != "" {
		return &RefusedError{Addr: ip, Range: name}
	}
	return nil
}

// refusedRange names the refused range ip lies in, or returns "".
func refusedRange(ip netip.Addr) string {
	if ip.Is4() {
		for _, r := range refused4 {
			if r.prefix.Contains(ip) {
				return r.name
			}
		}
		return ""
	}
	if ip.Is4In6() {
		if name := refusedRange(ip.Unmap()); name != "" {
			return "IPv4-mapped " + name
		}
		return ""
	}
	b := ip.As16()
	if nat64Prefix.Contains(ip) {
		v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		if name := refusedRange(v4); name != "" {
			return "NAT64 of " + name
		}
		return ""
	}
	if sixToFourPrefx.Contains(ip) {
		v4 := netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		if name := refusedRange(v4); name != "" {
			return "6to4 of " + name
		}
		return ""
	}
	for _, r := range refused6 {
		if r.prefix.Contains(ip) {
			return r.name
		}
	}
	if !globalUnicast6.Contains(ip) {
		return "reserved IPv6 (outside global unicast)"
	}
	return ""
}
