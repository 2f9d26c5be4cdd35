// Package apiauth is how Overseer's own clients (the hooks, the CLI, the
// TUI) and its daemon know each other without the daemon's token crossing
// the wire.
//
// A client finds the daemon by the address in the home's daemon.json. That
// file outlives a daemon that was killed or a machine that restarted, and
// anything may then listen on the address it names, among them a server an
// agent started. A client that sent its token as a bearer credential would
// hand the token (which answers approvals) to that server, and a hook would
// take that server's "allow" for the daemon's. So Overseer's clients sign
// each request instead: the Authorization header carries a time, a random
// nonce and a MAC, under the token, over the method, the request target,
// the time and the nonce. The daemon accepts a signature once, within
// Window of its clock, and answers it with a proof: a MAC under the token
// over the nonce, which only the holder of the token can make. A client
// takes no answer without the proof; without it, the server at the address
// is not this home's daemon (see ErrImpostor).
//
// The package imports the standard library only: the lean hook entry links
// it.
package apiauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Scheme is the Authorization scheme of a signed request:
//
//	Authorization: Overseer-MAC <unix seconds>.<nonce>.<mac>
const Scheme = "Overseer-MAC"

// ProofHeader is the answer's header carrying the daemon's proof.
const ProofHeader = "Overseer-Proof"

// Window is how far a signed request's time may be from the daemon's clock.
const Window = 2 * time.Minute

// ErrImpostor means the server at the daemon's address answered without a
// valid proof: it is not this home's daemon (or has another token).
var ErrImpostor = errors.New("the server at the daemon's address did not prove it is this home's Overseer daemon")

var b64 = base64.RawURLEncoding

func mac(token string, parts ...string) string {
	m := hmac.New(sha256.New, []byte(token))
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return b64.EncodeToString(m.Sum(nil))
}

// Sign returns the Authorization header of a request (method, target: the
// request line's target, path and query as sent) at now, and its nonce,
// which the answer's proof must be over.
func Sign(token, method, target string, now time.Time) (header, nonce string) {
	var raw [18]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic("apiauth: no randomness: " + err.Error()) // crypto/rand does not fail on supported systems
	}
	nonce = b64.EncodeToString(raw[:])
	ts := strconv.FormatInt(now.Unix(), 10)
	return Scheme + " " + ts + "." + nonce + "." + mac(token, "overseer request v1", method, target, ts, nonce), nonce
}

// Proof is the daemon's proof for a signed request with nonce.
func Proof(token, nonce string) string { return mac(token, "overseer daemon v1", nonce) }

// CheckProof reports whether got is the proof for nonce under token.
func CheckProof(token, nonce, got string) bool {
	return token != "" && nonce != "" && hmac.Equal([]byte(got), []byte(Proof(token, nonce)))
}

// Signed reports whether an Authorization header value is a signature
// (valid or not).
func Signed(header string) bool { return strings.HasPrefix(header, Scheme+" ") }

// Verifier checks signed requests, each nonce once. Safe for concurrent use.
type Verifier struct {
	mu   sync.Mutex
	seen map[string]int64 // nonce → unix seconds after which it may be forgotten
}

// maxSeen bounds the nonces remembered; beyond it signatures are refused
// until old ones expire (a flood of valid signatures needs the token).
const maxSeen = 1 << 16

// Verify checks header (an Authorization value) for a request with method
// and target at now under token. It returns the nonce to prove, and false
// for anything but a valid signature not seen before.
func (v *Verifier) Verify(token, header, method, target string, now time.Time) (nonce string, ok bool) {
	if token == "" {
		return "", false
	}
	rest, found := strings.CutPrefix(header, Scheme+" ")
	if !found {
		return "", false
	}
	ts, rest, ok1 := strings.Cut(rest, ".")
	nonce, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || nonce == "" || len(nonce) > 64 || len(ts) > 20 {
		return "", false
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", false
	}
	if d := now.Unix() - t; d > int64(Window/time.Second) || -d > int64(Window/time.Second) {
		return "", false
	}
	if !hmac.Equal([]byte(sig), []byte(mac(token, "overseer request v1", method, target, ts, nonce))) {
		return "", false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil {
		v.seen = map[string]int64{}
	}
	if _, dup := v.seen[nonce]; dup {
		return "", false // a replay
	}
	if len(v.seen) >= maxSeen {
		for n, until := range v.seen {
			if until < now.Unix() {
				delete(v.seen, n)
			}
		}
		if len(v.seen) >= maxSeen {
			return "", false
		}
	}
	v.seen[nonce] = t + 2*int64(Window/time.Second)
	return nonce, true
}
