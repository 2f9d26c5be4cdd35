package netguard

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
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

// jsSpace is JavaScript's \s: the white space a regular expression in
// Gemini CLI ends a URL at.
func jsSpace(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\v', r == '\f', r == '\r', r == ' ', r == 0xa0, r == 0x1680,
		r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000, r == 0xfeff:
		return true
	}
	return false
}

// geminiURLs is Gemini CLI's reading of a prompt, /https?:\/\/[^\s]+/g:
// leftmost matches, each from where the last one ended.
func geminiURLs(p string) []string {
	var out []string
	for i := 0; i < len(p); {
		n := 0
		for _, s := range []string{"https://", "http://"} {
			if strings.HasPrefix(p[i:], s) {
				n = len(s)
				break
			}
		}
		if n == 0 {
			i++
			continue
		}
		end := i + n
		for end < len(p) {
			r, size := utf8.DecodeRuneInString(p[end:])
			if jsSpace(r) {
				break
			}
			end += size
		}
		if end == i+n {
			i++ // the scheme alone is no match
			continue
		}
		out = append(out, p[i:end])
		i = end
	}
	return out
}

// FuzzPromptURLs: every URL Gemini CLI would fetch from a prompt begins
// one that PromptURLs reads (so the net guard judges its host), unless
// the prompt names too many and is put to a person.
func FuzzPromptURLs(f *testing.F) {
	for _, s := range []string{
		"Summarize https://go.dev/doc and http://127.0.0.1/",
		"https://example.com/x\ufeffhttp://10.0.0.1/",
		"https://example.com\u0085@10.0.0.1/",
		"xhttps://a.example?u=http://b.example http:// HTTP://c",
		"https://a\u00a0https://b\u3000http://c\u2028http://d",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !utf8.ValidString(p) {
			return // prompts arrive as JSON strings
		}
		ours, ok := PromptURLs(p)
		if !ok {
			return
		}
		for _, u := range ours {
			if !strings.HasPrefix(strings.ToLower(u), "http://") && !strings.HasPrefix(strings.ToLower(u), "https://") {
				t.Fatalf("%q read as a URL from %q", u, p)
			}
		}
		for _, g := range geminiURLs(p) {
			found := false
			for _, u := range ours {
				if strings.HasPrefix(u, g) {
					found = true
					break
				}
			}
			if !found {
				t.Fatalf("Gemini reads %q from %q; PromptURLs reads %q", g, p, ours)
			}
		}
	})
}
