package postgres

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzStoredKey: every key is stored as valid UTF-8 without NUL, within
// an index entry's bound, comes back as it was (a long one from its full
// form), and a short key with nothing to escape is stored unchanged.
func FuzzStoredKey(f *testing.F) {
	for _, s := range []string{"", "a", "srv\x00fact", "odd\x00\xff", "100%", "%00", "%zz", "é/ü", "\xe2\x82", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		s, full := stateKey(key)
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			t.Fatalf("storedKey(%q) = %q: not text PostgreSQL takes", key, s)
		}
		if !utf8.ValidString(full) || strings.IndexByte(full, 0) >= 0 {
			t.Fatalf("the full_key of %q is %q: not text PostgreSQL takes", key, full)
		}
		if got := listedKey(s, full); got != key {
			t.Fatalf("the key listed for %q is %q", key, got)
		}
		if len(s) > maxStoredKey+2+64 {
			t.Fatalf("storedKey(%q) is %d bytes, over the bound", key, len(s))
		}
		if !needsEscape(key) && len(key) <= maxStoredKey && s != key {
			t.Fatalf("storedKey(%q) = %q, want it unchanged", key, s)
		}
	})
}
