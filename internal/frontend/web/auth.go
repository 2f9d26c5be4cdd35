package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// SessionCookie is the name of the console's session cookie.
const SessionCookie = "overseer_session"

// CSRFHeader carries the CSRF token on the console's API requests; forms
// send it as the field "csrf".
const CSRFHeader = "X-CSRF-Token"

// sessionNS is the state namespace of console sessions; keys are the
// SHA-256 of the session id, so the database never holds a live cookie.
const sessionNS = "web_sessions"

// Sentinel errors of authentication.
var (
	// ErrNoSession means the request has no valid session.
	ErrNoSession = errors.New("web: not signed in")
	// ErrBadCSRF means a state-changing request lacks a valid CSRF token.
	ErrBadCSRF = errors.New("web: missing or invalid CSRF token")
)

// LoadKey reads the console's signing key from path, creating a random one
// (mode 0600) when the file does not exist (kernel.LoadConsoleKey: the
// kernel signs the records that let an agent do more with the same key). A
// key file that other users can read is refused: whoever holds the key can
// forge approval links.
func LoadKey(path string) ([]byte, error) { return kernel.LoadConsoleKey(path) }

// mac returns HMAC-SHA256 of the parts, joined by a separator, under key.
func mac(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	for i, p := range parts {
		if i > 0 {
			m.Write([]byte{0})
		}
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

// sessionRecord is what the store keeps of a session.
type sessionRecord struct {
	Who     string    `json:"who"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// TokenFP binds the session to the daemon token it was opened with: a
	// new token ends every session.
	TokenFP string `json:"token_fp"`
}

// session is a live session.
type session struct {
	id string
	sessionRecord
}

func sessionKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// newSession stores a session for who and returns its id.
func (c *Console) newSession(r *http.Request, who string) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	now := c.clk.Now()
	rec, err := json.Marshal(sessionRecord{Who: who, Created: now, Expires: now.Add(c.opts.SessionTTL), TokenFP: c.tokenFP})
	if err != nil {
		return "", err
	}
	err = c.k.Store.UpdateState(r.Context(), sessionNS, sessionKey(id), func([]byte) ([]byte, error) { return rec, nil })
	if err != nil {
		return "", fmt.Errorf("web: storing the session: %w", err)
	}
	return id, nil
}

// lookupSession returns the request's live session. Anything unexpected —
// no cookie, an unknown or expired session, a store error, a session of an
// older token — is ErrNoSession.
func (c *Console) lookupSession(r *http.Request) (*session, error) {
	ck, err := r.Cookie(SessionCookie)
	if err != nil || ck.Value == "" || len(ck.Value) > 100 {
		return nil, ErrNoSession
	}
	raw, err := c.k.Store.GetState(r.Context(), sessionNS, sessionKey(ck.Value))
	if err != nil {
		return nil, ErrNoSession
	}
	var rec sessionRecord
	if json.Unmarshal(raw, &rec) != nil {
		return nil, ErrNoSession
	}
	if !c.clk.Now().Before(rec.Expires) || subtle.ConstantTimeCompare([]byte(rec.TokenFP), []byte(c.tokenFP)) != 1 {
		_ = c.k.Store.UpdateState(r.Context(), sessionNS, sessionKey(ck.Value), func([]byte) ([]byte, error) { return nil, nil })
		return nil, ErrNoSession
	}
	return &session{id: ck.Value, sessionRecord: rec}, nil
}

// csrfToken is the CSRF token of a session: an HMAC of its id, so it needs
// no storage and cannot be computed without the key.
func (c *Console) csrfToken(sessionID string) string {
	return base64.RawURLEncoding.EncodeToString(mac(c.key, "csrf", sessionID))
}

// checkCSRF verifies the request's CSRF token against its session.
func (c *Console) checkCSRF(r *http.Request, sess *session) error {
	got := r.Header.Get(CSRFHeader)
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	want := c.csrfToken(sess.id)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return ErrBadCSRF
	}
	return nil
}

// session requires a live session; API calls get 401, pages a redirect.
func (c *Console) session(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, err := c.lookupSession(r)
		if err != nil {
			writeErr(w, http.StatusUnauthorized, "unauthorized", "sign in to the console first")
			return
		}
		h(w, r, sess)
	}
}

// csrf requires a valid CSRF token.
func (c *Console) csrf(h func(http.ResponseWriter, *http.Request, *session)) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		if err := c.checkCSRF(r, sess); err != nil {
			writeErr(w, http.StatusForbidden, "csrf", "this request lacks a valid CSRF token; reload the console")
			return
		}
		h(w, r, sess)
	}
}

func (c *Console) setSessionCookie(w http.ResponseWriter, r *http.Request, id string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name:     SessionCookie,
		Value:    id,
		Path:     Prefix,
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
}

// loginPage shows the sign-in form.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, err := c.lookupSession(r); err == nil {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	c.renderLogin(w, r, http.StatusOK, "")
}

func (c *Console) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = c.pages.login.render(w, loginVals(c.opts.Who, msg, r.TLS == nil && !remoteIsLoopback(r)))
}

// maxNameLen caps the name a person signs in with.
const maxNameLen = 64

// login checks the daemon token and opens a session. The right token always
// opens one; wrong ones are throttled per client (see limits.Throttle), so
// that an agent guessing from the person's own address cannot lock the
// person out.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	tok := strings.TrimSpace(r.PostFormValue("token"))
	if tok == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(strings.TrimSpace(c.opts.Token))) != 1 {
		if wait := c.limiter.Wrong(httpapi.ClientIP(r)); wait > 0 {
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			c.renderLogin(w, r, http.StatusTooManyRequests, fmt.Sprintf(
				"That is not the daemon's token, and there were too many wrong ones from this address: "+
					"the next wrong one is answered after %d s. The right token is always accepted.", secs))
			return
		}
		c.renderLogin(w, r, http.StatusUnauthorized, "That is not the daemon's token.")
		return
	}
	who := strings.TrimSpace(r.PostFormValue("who"))
	if who == "" {
		who = c.opts.Who
	}
	if len(who) > maxNameLen || strings.ContainsAny(who, "\r\n\x00") || who == "timeout" {
		c.renderLogin(w, r, http.StatusBadRequest, "Please use a short name without line breaks.")
		return
	}
	id, err := c.newSession(r, who)
	if err != nil {
		c.renderLogin(w, r, http.StatusInternalServerError, "Could not open a session: "+err.Error())
		return
	}
	c.setSessionCookie(w, r, id, int(c.opts.SessionTTL/time.Second))
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// logout ends the session (CSRF-checked: a foreign page cannot sign a
// person out).
func (c *Console) logout(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := c.checkCSRF(r, sess); err != nil {
		writeErr(w, http.StatusForbidden, "csrf", "this request lacks a valid CSRF token; reload the console")
		return
	}
	_ = c.k.Store.UpdateState(r.Context(), sessionNS, sessionKey(sess.id), func([]byte) ([]byte, error) { return nil, nil })
	c.setSessionCookie(w, r, "", -1)
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

// apiSession tells the page who is signed in.
func (c *Console) apiSession(w http.ResponseWriter, r *http.Request, sess *session) {
	writeJSON(w, http.StatusOK, map[string]any{"who": sess.Who, "expires": sess.Expires, "csrf": c.csrfToken(sess.id)})
}
