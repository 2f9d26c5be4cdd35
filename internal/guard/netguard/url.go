package netguard

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Policy is what an operator configures for the net guard.
type Policy struct {
	// AllowHosts opens private destinations that agents may reach anyway.
	// Each entry is a host name ("wiki.corp.example"), a wildcard for the
	// sub-domains of one ("*.corp.example"), an address ("10.1.2.3") or a
	// CIDR ("10.1.0.0/16"). A listed name may resolve to private addresses; a
	// listed address or CIDR is reachable whatever name leads to it.
	AllowHosts []string `json:"allow_hosts,omitempty" yaml:"allow_hosts,omitempty"`
}

// Validate reports the first entry of p that cannot be understood.
func (p Policy) Validate() error {
	_, err := p.compile()
	return err
}

// compiled is a Policy in the form checks read. It is immutable once built.
type compiled struct {
	prefixes []netip.Prefix
	names    map[string]bool
	suffixes []string // ".corp.example" for "*.corp.example"
}

func (p Policy) compile() (*compiled, error) {
	c := &compiled{names: map[string]bool{}}
	for _, raw := range p.AllowHosts {
		e := strings.TrimSpace(raw)
		if e == "" {
			return nil, fmt.Errorf("%w: empty allow_hosts entry", ErrPolicy)
		}
		if strings.Contains(e, "/") {
			pr, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("%w: allow_hosts entry %q: %v", ErrPolicy, raw, err)
			}
			c.prefixes = append(c.prefixes, pr.Masked())
			continue
		}
		if a, ok := ParseHost(e); ok {
			a = a.WithZone("")
			c.prefixes = append(c.prefixes, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		wild := strings.HasPrefix(e, "*.")
		name, err := normalizeHost(strings.TrimPrefix(e, "*."))
		name = strings.TrimSuffix(name, ".")
		if err != nil || !validName(name) || endsInNumber(name) {
			return nil, fmt.Errorf("%w: allow_hosts entry %q is not a host name, address or CIDR", ErrPolicy, raw)
		}
		if wild {
			c.suffixes = append(c.suffixes, "."+name)
		} else {
			c.names[name] = true
		}
	}
	return c, nil
}

// nameAllowed reports whether a normalised name (no trailing dot) is listed.
func (c *compiled) nameAllowed(name string) bool {
	if c.names[name] {
		return true
	}
	for _, s := range c.suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// CheckURL reports whether an agent may fetch raw, judging only what the URL
// itself says: the scheme must be http or https, there must be no
// user:password@ part, and a host written as an address (in any spelling
// ParseHost reads) must pass CheckIP. Hosts that are names pass unless they
// are well-known local or metadata names; the addresses a name resolves to
// are checked when the connection is made (see NewClient).
//
// The error wraps ErrRefused, ErrScheme, ErrUserinfo, ErrInvalidURL,
// ErrInvalidHost or ErrPolicy.
func CheckURL(raw string, pol Policy) error {
	c, err := pol.compile()
	if err != nil {
		return err
	}
	_, err = c.checkRawURL(raw)
	return err
}

// checkRawURL parses and checks raw.
func (c *compiled) checkRawURL(raw string) (*url.URL, error) {
	for i := 0; i < len(raw); i++ {
		if b := raw[i]; b <= ' ' || b == 0x7f || b == '\\' {
			return nil, fmt.Errorf("%w: control character, space or backslash in %q", ErrInvalidURL, raw)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	return u, c.checkURL(u)
}

// checkURL checks a parsed URL (also used for redirects and each request).
func (c *compiled) checkURL(u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return fmt.Errorf("%w: URL has no scheme (want http or https)", ErrScheme)
	default:
		return fmt.Errorf("%w: %q (want http or https)", ErrScheme, u.Scheme)
	}
	if u.Opaque != "" {
		return fmt.Errorf("%w: %s: no //host after the scheme", ErrInvalidURL, u.Redacted())
	}
	if u.User != nil {
		return fmt.Errorf("%w: %s", ErrUserinfo, u.Redacted())
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return fmt.Errorf("%w: port %q", ErrInvalidURL, p)
		}
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: URL has no host", ErrInvalidHost)
	}
	_, _, err := c.checkHost(host)
	return err
}

// checkHost judges a host as written. It returns the address when the host
// is numeric, or the normalised name (no trailing dot) otherwise. A name is
// not resolved here.
func (c *compiled) checkHost(host string) (addr netip.Addr, name string, err error) {
	h, err := normalizeHost(host)
	if err != nil {
		return netip.Addr{}, "", fmt.Errorf("%w: %q: %v", ErrInvalidHost, host, err)
	}
	if a, ok := ParseHost(h); ok {
		if err := CheckIP(a, c.prefixes...); err != nil {
			if re, ok := err.(*RefusedError); ok && !strings.EqualFold(host, a.String()) {
				re.Host = host
			}
			return netip.Addr{}, "", err
		}
		return a.WithZone(""), "", nil
	}
	if strings.ContainsAny(h, ":[]%") {
		return netip.Addr{}, "", fmt.Errorf("%w: %q is not a valid IPv6 address", ErrInvalidHost, host)
	}
	name = strings.TrimSuffix(h, ".")
	if endsInNumber(name) {
		return netip.Addr{}, "", fmt.Errorf("%w: %q looks like a number but is not a valid address", ErrInvalidHost, host)
	}
	if !validName(name) {
		return netip.Addr{}, "", fmt.Errorf("%w: %q is not a valid host name", ErrInvalidHost, host)
	}
	if c.nameAllowed(name) {
		return netip.Addr{}, name, nil
	}
	if why := refusedName(name); why != "" {
		return netip.Addr{}, "", fmt.Errorf("%w: host %q is %s", ErrRefused, host, why)
	}
	return netip.Addr{}, name, nil
}
