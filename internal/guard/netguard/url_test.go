package netguard

import (
	"errors"
	"net/netip"
	"testing"
)

func TestCheckIP(t *testing.T) {
	tests := []struct {
		name  string
		ip    string
		allow []string
		want  error // nil or ErrRefused
	}{
		{"public v4", "8.8.8.8", nil, nil},
		{"loopback", "127.0.0.1", nil, ErrRefused},
		{"loopback top", "127.255.255.255", nil, ErrRefused},
		{"metadata", "169.254.169.254", nil, ErrRefused},
		{"rfc1918 10", "10.200.0.1", nil, ErrRefused},
		{"rfc1918 172", "172.20.0.1", nil, ErrRefused},
		{"rfc1918 192", "192.168.0.1", nil, ErrRefused},
		{"cgnat", "100.127.255.255", nil, ErrRefused},
		{"just below cgnat", "100.63.255.255", nil, nil},
		{"unspecified", "0.0.0.0", nil, ErrRefused},
		{"this network", "0.1.2.3", nil, ErrRefused},
		{"broadcast", "255.255.255.255", nil, ErrRefused},
		{"multicast", "239.1.1.1", nil, ErrRefused},
		{"reserved", "250.0.0.1", nil, ErrRefused},
		{"benchmark", "198.19.255.255", nil, ErrRefused},
		{"v6 loopback", "::1", nil, ErrRefused},
		{"v6 unspecified", "::", nil, ErrRefused},
		{"v6 mapped loopback", "::ffff:127.0.0.1", nil, ErrRefused},
		{"v6 mapped public", "::ffff:1.1.1.1", nil, nil},
		{"v6 compatible", "::8.8.8.8", nil, ErrRefused},
		{"nat64 private", "64:ff9b::10.0.0.1", nil, ErrRefused},
		{"nat64 public", "64:ff9b::1.1.1.1", nil, nil},
		{"6to4 loopback", "2002:7f00:0001::1", nil, ErrRefused},
		{"6to4 public", "2002:0101:0101::1", nil, nil},
		{"teredo", "2001:0:53aa:64c:0:0:0:1", nil, ErrRefused},
		{"ula", "fd00::1", nil, ErrRefused},
		{"link-local v6 zone", "fe80::1%eth0", nil, ErrRefused},
		{"multicast v6", "ff05::2", nil, ErrRefused},
		{"outside 2000::/3", "c000::1", nil, ErrRefused},
		{"global v6", "2a00:1450:4001:81b::200e", nil, nil},
		{"allowed cidr", "10.1.2.3", []string{"10.1.0.0/16"}, nil},
		{"outside allowed cidr", "10.2.2.3", []string{"10.1.0.0/16"}, ErrRefused},
		{"allowed loopback host", "127.0.0.1", []string{"127.0.0.1/32"}, nil},
		{"allowed cidr covers mapped", "::ffff:10.1.2.3", []string{"10.1.0.0/16"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var allow []netip.Prefix
			for _, a := range tt.allow {
				allow = append(allow, netip.MustParsePrefix(a))
			}
			err := CheckIP(netip.MustParseAddr(tt.ip), allow...)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("CheckIP(%s) = %v, want %v", tt.ip, err, tt.want)
			}
			var re *RefusedError
			if err != nil && (!errors.As(err, &re) || re.Range == "") {
				t.Fatalf("CheckIP(%s) = %#v, want a *RefusedError naming the range", tt.ip, err)
			}
		})
	}
	t.Run("invalid address", func(t *testing.T) {
		if err := CheckIP(netip.Addr{}); !errors.Is(err, ErrRefused) {
			t.Fatalf("CheckIP(zero) = %v, want ErrRefused", err)
		}
	})
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		pol  Policy
		want error
	}{
		{"https ok", "https://example.com:8443/path?q=1#frag", Policy{}, nil},
		{"upper-case scheme and host", "HTTP://EXAMPLE.COM/", Policy{}, nil},
		{"escaped path", "http://example.com/%0d%0a", Policy{}, nil},
		{"ftp", "ftp://example.com/", Policy{}, ErrScheme},
		{"file", "file:///etc/passwd", Policy{}, ErrScheme},
		{"gopher", "gopher://127.0.0.1:6379/_INFO", Policy{}, ErrScheme},
		{"javascript", "javascript:alert(1)", Policy{}, ErrScheme},
		{"data", "data:text/html,hi", Policy{}, ErrScheme},
		{"scheme-relative", "//example.com/", Policy{}, ErrScheme},
		{"relative", "/just/a/path", Policy{}, ErrScheme},
		{"opaque", "http:example.com", Policy{}, ErrInvalidURL},
		{"no host", "http:///path", Policy{}, ErrInvalidHost},
		{"userinfo", "http://user:pass@example.com/", Policy{}, ErrUserinfo},
		{"userinfo hiding host", "http://example.com@127.0.0.1/", Policy{}, ErrUserinfo},
		{"userinfo empty", "http://@example.com/", Policy{}, ErrUserinfo},
		{"backslash trick", `http://127.0.0.1\@example.com/`, Policy{}, ErrInvalidURL},
		{"backslash trick reversed", `http://example.com\@127.0.0.1/`, Policy{}, ErrInvalidURL},
		{"leading space", " http://example.com/", Policy{}, ErrInvalidURL},
		{"tab in host", "http://exa\tmple.com/", Policy{}, ErrInvalidURL},
		{"newline", "http://example.com/\nHost: x", Policy{}, ErrInvalidURL},
		{"port zero", "http://example.com:0/", Policy{}, ErrInvalidURL},
		{"port too large", "http://example.com:99999/", Policy{}, ErrInvalidURL},
		{"port on loopback", "http://127.0.0.1:8080/", Policy{}, ErrRefused},
		{"zone escaped", "http://[fe80::1%25en0]:8080/", Policy{}, ErrRefused},
		{"mapped in brackets", "http://[::ffff:a9fe:a9fe]/latest/meta-data/", Policy{}, ErrRefused},
		{"empty", "", Policy{}, ErrScheme},
		{"percent in host", "http://127%2e0%2e0%2e1/", Policy{}, ErrInvalidURL},
		{"allowed cidr", "http://10.1.2.3/", Policy{AllowHosts: []string{"10.1.0.0/16"}}, nil},
		{"allowed address", "http://127.0.0.1:9000/", Policy{AllowHosts: []string{"127.0.0.1"}}, nil},
		{"allowed address other spelling", "http://0x7f.1:9000/", Policy{AllowHosts: []string{"127.0.0.1"}}, nil},
		{"allowed name", "http://wiki.corp.example/", Policy{AllowHosts: []string{"wiki.corp.example"}}, nil},
		{"allowed wildcard", "http://a.b.corp.example/", Policy{AllowHosts: []string{"*.corp.example"}}, nil},
		{"wildcard not apex", "http://localhost/", Policy{AllowHosts: []string{"*.localhost"}}, ErrRefused},
		{"allowed localhost", "http://localhost:8080/", Policy{AllowHosts: []string{"localhost"}}, nil},
		{"allow does not open others", "http://192.168.0.1/", Policy{AllowHosts: []string{"10.0.0.0/8"}}, ErrRefused},
		{"bad policy fails closed", "http://example.com/", Policy{AllowHosts: []string{"not a host!"}}, ErrPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckURL(tt.raw, tt.pol)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want nil", tt.raw, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("CheckURL(%q) = %v, want %v", tt.raw, err, tt.want)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name  string
		entry string
		ok    bool
	}{
		{"cidr", "10.0.0.0/8", true},
		{"unmasked cidr", "10.1.2.3/8", true},
		{"v6 cidr", "fd00::/8", true},
		{"address", "192.168.1.10", true},
		{"bracketed v6", "[fd00::1]", true},
		{"name", "Wiki.Corp.Example.", true},
		{"wildcard", "*.corp.example", true},
		{"idn", "bücher.example", true},
		{"empty", "", false},
		{"spaces", "   ", false},
		{"bad cidr", "10.0.0.0/33", false},
		{"bad name", "not a host!", false},
		{"bare wildcard", "*.", false},
		{"numeric-looking name", "1.2.3.09", false},
		{"url", "http://example.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Policy{AllowHosts: []string{tt.entry}}.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate(%q) = %v, want nil", tt.entry, err)
			}
			if !tt.ok && !errors.Is(err, ErrPolicy) {
				t.Fatalf("Validate(%q) = %v, want ErrPolicy", tt.entry, err)
			}
		})
	}
}
