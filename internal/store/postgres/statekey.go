package postgres

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// State keys are the callers' strings, any bytes: the MCP gateway's pins
// and the shared quotas' buckets join their parts with NUL, and a key may
// hold a name an agent made up. PostgreSQL's text takes neither NUL nor
// bytes that are not UTF-8, so keys are stored escaped: '%', NUL and each
// byte of an invalid UTF-8 sequence as '%' and two hex digits. Any other
// key is stored as it is (the schema's step 3 escaped the '%' of keys
// stored before).

// migration3 escapes the '%' of the keys stored before keys were escaped
// (they could hold neither NUL nor invalid UTF-8, so that is all they
// need; replace cannot make two keys one).
var migration3 = migration{3, "state keys escaped", []string{
	`UPDATE state SET key = replace(key, '%', '%25') WHERE strpos(key, '%') > 0`,
}}

// Long keys. PostgreSQL refuses an index entry over 2704 bytes, and the
// state table's key is its primary key's: a key longer than that (a
// session name an agent made up, in a quota bucket's or a spend counter's
// key) failed its write — and with it every other key written in the same
// transaction (the spend of every session, flushed together), where the
// SQLite store takes any key. A key whose escaped form is longer than
// maxStoredKey is stored as its first bytes, "%~" (which no escaped key
// holds: a '%' there is followed by two hex digits) and the SHA-256 of the
// key, and its row keeps the escaped key whole in full_key (not indexed),
// from which ListState gives it back.

// maxStoredKey is the longest escaped key stored as it is.
const maxStoredKey = 1024

// migration4 adds the column of long keys' full form (empty for the
// others).
var migration4 = migration{4, "long state keys", []string{
	`ALTER TABLE state ADD COLUMN full_key text NOT NULL DEFAULT ''`,
}}

// stateKey returns the two columns a key's row has: stored, the key
// column (the escaped key, or for a long one its first bytes, "%~" and its
// SHA-256), and full, the full_key column (the escaped key when it is too
// long to be stored as it is, else "").
func stateKey(key string) (stored, full string) {
	s := escapedKey(key)
	if len(s) <= maxStoredKey {
		return s, ""
	}
	h := sha256.Sum256([]byte(key))
	cut := 256
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "%~" + hex.EncodeToString(h[:]), s
}

// storedKey is key as the state table's key column holds it (stateKey).
func storedKey(key string) string {
	s, _ := stateKey(key)
	return s
}

// The state table's statements. Every key and full_key in them is as
// stateKey makes them: the statements take keys in no other form.
const (
	lockStateSQL   = `SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))` // $1 stateClass, $2 ns, $3 key
	getStateSQL    = `SELECT value FROM state WHERE ns = $1 AND key = $2`
	deleteStateSQL = `DELETE FROM state WHERE ns = $1 AND key = $2`
	setStateSQL    = `INSERT INTO state (ns, key, value, full_key) VALUES ($1, $2, $3, $4)
		ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value`
	addStateSQL = `INSERT INTO state (ns, key, value, full_key) VALUES ($1, $2, $3, $4) ON CONFLICT (ns, key) DO NOTHING`
)

// listedKey is the caller's key of a row: from full_key when it is set.
func listedKey(stored, full string) string {
	if full != "" {
		return keyOf(full)
	}
	return keyOf(stored)
}

// escapedKey is key with '%', NUL and invalid UTF-8 escaped.
func escapedKey(key string) string {
	if !needsEscape(key) {
		return key
	}
	var b strings.Builder
	b.Grow(len(key) + 8)
	for i := 0; i < len(key); {
		c := key[i]
		if c == '%' || c == 0 {
			escapeByte(&b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(key[i:])
		if r == utf8.RuneError && n == 1 {
			escapeByte(&b, c)
			i++
			continue
		}
		b.WriteString(key[i : i+n])
		i += n
	}
	return b.String()
}

func needsEscape(key string) bool {
	return strings.IndexByte(key, '%') >= 0 || strings.IndexByte(key, 0) >= 0 || !utf8.ValidString(key)
}

const hexDigits = "0123456789ABCDEF"

func escapeByte(b *strings.Builder, c byte) {
	b.WriteByte('%')
	b.WriteByte(hexDigits[c>>4])
	b.WriteByte(hexDigits[c&15])
}

// keyOf is the caller's key of a key the state table holds (storedKey's
// inverse). A '%' not followed by two hex digits, which storedKey never
// writes, is kept as it is.
func keyOf(stored string) string {
	if strings.IndexByte(stored, '%') < 0 {
		return stored
	}
	var b strings.Builder
	b.Grow(len(stored))
	for i := 0; i < len(stored); i++ {
		if c := stored[i]; c == '%' && i+2 < len(stored) && isHex(stored[i+1]) && isHex(stored[i+2]) {
			b.WriteByte(unhex(stored[i+1])<<4 | unhex(stored[i+2]))
			i += 2
			continue
		}
		b.WriteByte(stored[i])
	}
	return b.String()
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' || 'a' <= c && c <= 'f' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
