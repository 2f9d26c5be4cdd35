package kernel

// Records that let an agent do more — a person's approval, a grant's
// issue — are signed by the instance that writes them, with a key of its
// home that the database does not hold.
//
// The checks of evidence.go compare the approvals and the user layer with
// their audit records, but a record is only data in the database: whoever
// can write the database (one SQLite file in the home, which the guards
// keep from the agents, or a PostgreSQL server that anyone with its
// password can reach) could write an answer row and an answer record that
// agree, chained to the log's tail with the unkeyed hash, and an agent
// waiting on that approval would run. The record's seal does not help at
// that moment: its tag is under an epoch key that has evolved away by the
// time another instance reads it. So these records also carry a MAC under
// a key derived from the console's key (ConsoleKeyName), which every
// instance of a fleet has a copy of (docs/deploy.md) and which already
// signs the approve links: whoever holds it can approve through a link
// anyway, so it grants nothing new. A record without a valid MAC does not
// let anything through: an approving answer without one reads as refused,
// a grant issued without one is not in force. Records that only restrict
// (a denial, a revocation) are taken as they are.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/overseer-dev/overseer/internal/store"
)

// ConsoleKeyName is the console's signing key file in Overseer's home: it
// signs the approve links, the channels' answer tokens and the records
// that let an agent do more.
const ConsoleKeyName = "web.key"

// ErrKeyPermissions means the console's key file can be read by others.
var ErrKeyPermissions = errors.New("the console's signing key is readable by other users")

// LoadConsoleKey reads the console's signing key from path, creating a
// random one (mode 0600) when the file does not exist. A key file that
// other users can read is refused: whoever holds the key can forge
// approvals.
func LoadConsoleKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		var raw [32]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return nil, fmt.Errorf("random key: %w", err)
		}
		// Written whole to a file of its own and linked into place, so
		// that another process (a hook, the CLI: every kernel signs) never
		// reads it half written.
		f, err := os.CreateTemp(filepath.Dir(path), ".web.key-*")
		if err != nil {
			return nil, fmt.Errorf("creating the signing key: %w", err)
		}
		tmp := f.Name()
		defer os.Remove(tmp)
		if _, err := f.WriteString(hex.EncodeToString(raw[:]) + "\n"); err != nil {
			f.Close()
			return nil, fmt.Errorf("writing the signing key: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("writing the signing key: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("writing the signing key: %w", err)
		}
		if err := os.Link(tmp, path); errors.Is(err, os.ErrExist) {
			return LoadConsoleKey(path) // another process created it first
		} else if err != nil {
			return nil, fmt.Errorf("creating the signing key: %w", err)
		}
		return raw[:], nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the signing key: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading the signing key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %v (run: chmod 600 %s)", ErrKeyPermissions, path, fi.Mode().Perm(), path)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("%s does not hold a 32-byte hex key (delete it to make a new one)", path)
	}
	return key, nil
}

// recordSigner holds the key records are signed with, read on first use,
// and the records whose signature it checked: the checks of evidence.go
// read the same records again and again (the user layer every second), and
// a record that still holds the data checked needs no MAC again.
type recordSigner struct {
	once sync.Once
	key  []byte
	err  error

	mu       sync.Mutex
	verified map[int64]string // seq: the data (type first) whose signature checked
}

// maxVerified bounds recordSigner.verified; past it, it starts again.
const maxVerified = 1 << 14

func (k *Kernel) recordKey() ([]byte, error) {
	s := &k.signer
	s.once.Do(func() {
		if k.Home == "" {
			s.err = errors.New("the key that signs approvals and grants: no home")
			return
		}
		ck, err := LoadConsoleKey(filepath.Join(k.Home, ConsoleKeyName))
		if err != nil {
			s.err = fmt.Errorf("the key that signs approvals and grants: %w", err)
			return
		}
		m := hmac.New(sha256.New, ck)
		m.Write([]byte("overseer record signatures v1"))
		s.key = m.Sum(nil)
	})
	return s.key, s.err
}

// recordMAC is the MAC of a record of type typ whose data, without its
// MAC, is body.
func (k *Kernel) recordMAC(typ string, body []byte) (string, error) {
	key, err := k.recordKey()
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(typ))
	m.Write([]byte{0})
	m.Write(body)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// macField is how a signed record's data ends: its MAC, as the last
// field of the object. The MAC covers the data's exact bytes before it, so
// that checking it does not depend on decoding and encoding them again.
const macField = `,"mac":"`

// signedData encodes v, a record's data (a JSON object whose mac field is
// empty), with the MAC of its encoding as its last field.
func (k *Kernel) signedData(typ string, v any) (json.RawMessage, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' || bytes.Contains(body, []byte(macField)) {
		return nil, fmt.Errorf("%s record: cannot be signed", typ)
	}
	mac, err := k.recordMAC(typ, body)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(macField)+len(mac)+2)
	out = append(out, body[:len(body)-1]...)
	out = append(out, macField...)
	out = append(out, mac...)
	return append(out, '"', '}'), nil
}

// signedRecord reports whether r's data carries the MAC of an instance
// for a record of r's type (signedBy), remembering those that do.
func (k *Kernel) signedRecord(r store.AuditRecord) bool {
	if !k.shared {
		// An SQLite file in the home: whoever can write it can read the
		// key beside it (both are the home's, and the guards keep agents
		// from both), so a signature proves nothing more there. Records
		// written before signing (a person's rules, grants and answers
		// from an older version) keep their force after an upgrade.
		return true
	}
	if r.Seq > 0 && r.Seq <= k.sealedThrough {
		return true // its seal was proved (FindingsOf)
	}
	s := &k.signer
	want := r.Type + "\x00" + string(r.Data)
	s.mu.Lock()
	got, ok := s.verified[r.Seq]
	s.mu.Unlock()
	if ok && got == want {
		return true
	}
	if !k.signedBy(r.Type, r.Data) {
		return false
	}
	s.mu.Lock()
	if s.verified == nil || len(s.verified) >= maxVerified {
		s.verified = make(map[int64]string)
	}
	s.verified[r.Seq] = want
	s.mu.Unlock()
	return true
}

// signedBy reports whether data, a record's data of type typ, carries the
// MAC of an instance (signedData).
func (k *Kernel) signedBy(typ string, data []byte) bool {
	i := bytes.LastIndex(data, []byte(macField))
	if i < 0 || !bytes.HasSuffix(data, []byte(`"}`)) || i+len(macField) > len(data)-2 {
		return false
	}
	got := data[i+len(macField) : len(data)-2]
	body := append(append([]byte(nil), data[:i]...), '}')
	want, err := k.recordMAC(typ, body)
	return err == nil && hmac.Equal(got, []byte(want))
}

// pinSigner signs the MCP gateway's accepted definitions (mcppin.Signer)
// on a shared store, as records that let an agent do more are signed: a
// pin is what lets a tool's definition reach the agent.
type pinSigner struct{ k *Kernel }

// pinMACType keeps a pin's MAC from being taken for a record's.
const pinMACType = "mcp_pin"

func (s pinSigner) Sign(body []byte) (string, error) { return s.k.recordMAC(pinMACType, body) }

func (s pinSigner) Valid(body, mac []byte) bool {
	want, err := s.k.recordMAC(pinMACType, body)
	return err == nil && hmac.Equal(mac, []byte(want))
}
