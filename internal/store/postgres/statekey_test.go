package postgres

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzStoredKey: every key is stored as valid UTF-8 without NUL, comes
// back as it was, and a key with nothing to escape is stored unchanged.
func FuzzStoredKey(f *testing.F) {
	for _, s := range []string{"", "a", "srv\x00fact", "odd\x00\xff", "100%", "%00", "%zz", "é/ü", "\xe2\x82", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		s := storedKey(key)
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			t.Fatalf("storedKey(%q) = %q: not text PostgreSQL takes", key, s)
		}
		if got := keyOf(s); got != key {
			t.Fatalf("keyOf(storedKey(%q)) = %q", key, got)
		}
		if !needsEscape(key) && s != key {
			t.Fatalf("storedKey(%q) = %q, want it unchanged", key, s)
		}
	})
}
