package netguard

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// FuzzParseHost: ParseHost never panics, and a host it reads as a refused
// address is refused by CheckURL in every way it can be written in a URL.
func FuzzParseHost(f *testing.F) {
	for _, c := range loadHostCases(f) {
		f.Add(c.spelling)
	}
	f.Fuzz(func(t *testing.T, host string) {
		a, ok := ParseHost(host)
		if !ok {
			return
		}
		if !a.IsValid() {
			t.Fatalf("ParseHost(%q) = invalid address with ok", host)
		}
		if CheckIP(a) == nil {
			return
		}
		h := host
		if a.Is6() && !strings.HasPrefix(h, "[") {
			h = "[" + strings.Replace(h, "%", "%25", 1) + "]"
		}
		raw := "http://" + h + "/"
		if err := CheckURL(raw, Policy{}); err == nil {
			t.Fatalf("ParseHost(%q) = %v (refused) but CheckURL(%q) = nil", host, a, raw)
		}
	})
}

// FuzzCheckURL: CheckURL never panics; whatever it accepts is an http(s) URL
// without credentials whose host, if numeric, is an address CheckIP accepts,
// and which is not a local name.
func FuzzCheckURL(f *testing.F) {
	for _, c := range loadHostCases(f) {
		f.Add("http://" + c.spelling + "/")
		f.Add("https://" + c.spelling + ":8443/a?b#c")
	}
	for _, s := range []string{
		"ftp://example.com/", "http://a@127.0.0.1/", `http://127.0.0.1\@example.com/`, "http:example.com",
		"//127.0.0.1/", "HTTP://[::ffff:127.0.0.1]:80/", "http://[fe80::1%25en0]/", "http://%31%32%37.0.0.1/",
		"http://example.com:0/", "http://xn--n3h.example/", "http://ｌｏｃａｌｈｏｓｔ/", "http://127.0.0.1#@example.com/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := CheckURL(raw, Policy{})
		if err != nil {
			if !errors.Is(err, ErrRefused) && !errors.Is(err, ErrScheme) && !errors.Is(err, ErrUserinfo) &&
				!errors.Is(err, ErrInvalidURL) && !errors.Is(err, ErrInvalidHost) {
				t.Fatalf("CheckURL(%q) = %v: not one of the documented errors", raw, err)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil {
			t.Fatalf("CheckURL accepted %q, which url.Parse rejects: %v", raw, perr)
		}
		if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
			t.Fatalf("CheckURL accepted scheme %q", u.Scheme)
		}
		if u.User != nil {
			t.Fatalf("CheckURL accepted userinfo in %q", raw)
		}
		host := u.Hostname()
		if a, ok := ParseHost(host); ok {
			if cerr := CheckIP(a); cerr != nil {
				t.Fatalf("CheckURL accepted %q whose host reads as %v: %v", raw, a, cerr)
			}
		}
		if n, nerr := normalizeHost(host); nerr == nil && refusedName(strings.TrimSuffix(n, ".")) != "" {
			t.Fatalf("CheckURL accepted local name in %q", raw)
		}
	})
}
