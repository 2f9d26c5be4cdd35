package secrets

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every decoder has a native fuzz target: none may panic, and each undoes
// its encoding for text that the encoder produced.

var fuzzSeeds = []string{
	"", "a", "AKIA2OGYBAH6Q3KXZ7PW", "aws_secret_access_key = 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",
	"%41%4B%49%41", "\\u0041\\x4b&#73;&#x41;", "ghp\u200b_R8x2Kq9LmN4vB7cT1yH6jD3fG5sA0wE2zP8u", "ＡＫＩＡ",
	"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END", "postgres://u:p4ssw0rd!@h/db", "%", "\\u{1F600}", "&#xZZ;",
}

// plain reports text without control characters, which every decoder
// must give back whole (a text with some is judged on a prefix first).
func plain(s string) bool {
	if !utf8.ValidString(s) || len(s) < 6 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func FuzzDecodeBase64(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		DecodeBase64(s)
		if len(s) < 12 || !plain(s) {
			return
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			e := enc.EncodeToString([]byte(s))
			got, ok := DecodeBase64(e)
			if !ok || got != s {
				t.Fatalf("DecodeBase64(%q) = %q, %v; want %q", e, got, ok, s)
			}
		}
	})
}

func FuzzDecodeHex(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		DecodeHex(s)
		if len(s) < 8 || !plain(s) {
			return
		}
		for _, e := range []string{hex.EncodeToString([]byte(s)), strings.ToUpper(hex.EncodeToString([]byte(s)))} {
			got, ok := DecodeHex(e)
			if !ok || got != s {
				t.Fatalf("DecodeHex(%q) = %q, %v; want %q", e, got, ok, s)
			}
		}
	})
}

func FuzzDecodeBase32(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		DecodeBase32(s)
		if len(s) < 10 || !plain(s) {
			return
		}
		e := base32.StdEncoding.EncodeToString([]byte(s))
		for _, v := range []string{e, strings.ToLower(strings.TrimRight(e, "="))} {
			got, ok := DecodeBase32(v)
			if !ok || got != s {
				t.Fatalf("DecodeBase32(%q) = %q, %v; want %q", v, got, ok, s)
			}
		}
	})
}

func FuzzURLDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		URLDecode(s)
		for _, e := range []string{url.PathEscape(s), strings.ReplaceAll(url.QueryEscape(s), "+", "%20")} {
			if got, _ := URLDecode(e); got != s {
				t.Fatalf("URLDecode(%q) = %q, want %q", e, got, s)
			}
		}
	})
}

func FuzzUnescape(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		Unescape(s)
		if !utf8.ValidString(s) || strings.ContainsAny(s, "&\a\b\f\v\x00") {
			return
		}
		for _, r := range s {
			if r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f {
				return
			}
		}
		q := strconv.QuoteToASCII(s)
		e := q[1 : len(q)-1]
		if got, _ := Unescape(e); got != s {
			t.Fatalf("Unescape(%q) = %q, want %q", e, got, s)
		}
	})
}

func FuzzFold(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, changed := Fold(s)
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("Fold(%q) = %q: not UTF-8", s, out)
		}
		ascii := true
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				ascii = false
			}
		}
		if ascii && (changed || out != s) {
			t.Fatalf("Fold changed ASCII text %q to %q", s, out)
		}
	})
}

func FuzzJoinLabels(f *testing.F) {
	f.Add("AKIA2OGY.BAH6Q3KX.Z7PW.evil.example")
	f.Add("example.com")
	f.Add("...")
	f.Fuzz(func(t *testing.T, host string) {
		j := JoinLabels(host)
		if strings.Contains(j, ".") {
			t.Fatalf("JoinLabels(%q) = %q keeps a dot", host, j)
		}
	})
}

// FuzzScan runs every decoder stacked, through the analyser: no panic,
// and no finding shows more than four characters of a secret.
func FuzzScan(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	fp, err := NewFingerprints(make([]byte, KeySize))
	if err != nil {
		f.Fatal(err)
	}
	fp.Add("test value", "Xk9fQ2mZ7wLpR4vT8yN1bC6dH3jK5sA0eU2iO9gF")
	// A short value: the token pass and its soft-separated pieces run.
	fp.Add("short value", "0ZzlsUXnDAUyQJKC")
	f.Add("x-0ZzlsUXnDAUyQJKC_v2.png a.b.0ZzlsUXnDAUyQJKC")
	a := New(Options{Known: fp})
	f.Fuzz(func(t *testing.T, s string) {
		for _, fd := range a.ScanParts([]Part{{Name: "a", Text: s}, {Name: "b", Text: s}}) {
			head, _, ok := strings.Cut(fd.Masked, "…(")
			if !ok || utf8.RuneCountInString(head) > 4 {
				t.Fatalf("finding %+v shows more than four characters", fd)
			}
		}
	})
}
