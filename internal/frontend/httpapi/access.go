package httpapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/apiauth"
	"github.com/overseer-dev/overseer/internal/limits"
)

// ScrapeTokenFile is the name, in Overseer's home, of the file holding the
// scrape token (mode 0600, created by the daemon): the read-only credential
// of GET /metrics, for a Prometheus server's credentials_file. It reads the
// metrics and nothing else.
const ScrapeTokenFile = "metrics.token"

// bearer returns the request's bearer credential and whether it presented
// one at all.
func bearer(r *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	tok = strings.TrimSpace(tok)
	return tok, ok && tok != ""
}

func equal(a, b string) bool {
	return b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// Authorized reports whether r carries the daemon's token, or a valid
// signature made with it (see Server.serve).
func (s *Server) Authorized(r *http.Request) bool {
	if signed, _ := r.Context().Value(signedKey{}).(bool); signed {
		return true
	}
	tok, ok := bearer(r)
	return ok && equal(tok, s.opts.Token)
}

// ClientIP is the address a request came from, without its port: the
// client the throttle counts wrong credentials of.
func ClientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// auth requires the daemon's token.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.Authorized(r) {
			h(w, r)
			return
		}
		s.refuse(w, r, "this endpoint needs the daemon's token (Authorization: Bearer <token from $OVERSEER_HOME/token>)")
	}
}

// scrape requires the scrape token or the daemon's token.
func (s *Server) scrape(h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := bearer(r); s.Authorized(r) || ok && equal(tok, s.opts.ScrapeToken) {
			h.ServeHTTP(w, r)
			return
		}
		s.refuse(w, r, "the metrics need the scrape token (Authorization: Bearer <token from $OVERSEER_HOME/"+
			ScrapeTokenFile+">) or the daemon's token")
	}
}

// statusAuth requires the daemon's token or the status token of the action
// named in the path.
func (s *Server) statusAuth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := bearer(r); s.Authorized(r) || ok && equal(tok, s.StatusToken(r.PathValue("id"))) {
			h(w, r)
			return
		}
		s.refuse(w, r, "an action's outcome needs its status_token, returned when it was submitted "+
			"(Authorization: Bearer <status_token>), or the daemon's token")
	}
}

// StatusToken is the credential that reads the outcome of action id (and
// nothing else): returned to whoever submitted it. It is derived from the
// daemon's token, so it outlives a restart of the daemon.
func (s *Server) StatusToken(id string) string {
	m := hmac.New(sha256.New, []byte(s.opts.Token))
	m.Write([]byte("overseer action status\x00" + id))
	return "st_" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// refuse answers a request without the right credential: 401, or 429 with
// Retry-After when its client has guessed wrong too often. A request that
// presented no credential at all is not a guess.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, msg string) {
	if _, presented := bearer(r); presented || apiauth.Signed(r.Header.Get("Authorization")) {
		s.metrics.authFailures.Inc()
		if wait := s.opts.Throttle.Wrong(ClientIP(r)); wait > 0 {
			WriteThrottled(w, wait)
			return
		}
	}
	writeErr(w, http.StatusUnauthorized, "unauthorized", msg)
}

// retrySeconds is d rounded up to whole seconds, at least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// WriteThrottled answers a wrong credential from a client in backoff: 429
// with Retry-After. The right credential is never answered so.
func WriteThrottled(w http.ResponseWriter, wait time.Duration) {
	secs := retrySeconds(wait)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	WriteJSON(w, http.StatusTooManyRequests, map[string]any{
		"error": apiError{Code: "throttled", Message: fmt.Sprintf(
			"too many wrong credentials from this address; the next wrong one is answered after %ds "+
				"(the right credential is always accepted)", secs)},
		"retry_after": secs,
	})
}

// WriteQuota answers a submission over a quota: 429 with Retry-After.
func WriteQuota(w http.ResponseWriter, d *limits.Denied) {
	secs := retrySeconds(d.RetryAfter)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	whose := map[string]string{"session": "this agent session", "agent": "this agent", "all": "all agents together"}[d.Scope]
	WriteJSON(w, http.StatusTooManyRequests, map[string]any{
		"error": apiError{Code: "quota", Message: fmt.Sprintf(
			"over the %s quota of %s (settings.limits.%s): nothing was recorded; retry after %ds",
			d.What, whose, d.Scope, secs)},
		"retry_after": secs,
		"scope":       d.Scope,
		"limit":       d.What,
	})
}

// readBody reads r's body up to MaxBody; a larger one is answered with 413.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > s.opts.MaxBody {
		writeErr(w, http.StatusRequestEntityTooLarge, "too_large",
			fmt.Sprintf("the request body is over %d bytes", s.opts.MaxBody))
		return nil, false
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeErr(w, http.StatusRequestEntityTooLarge, "too_large",
			fmt.Sprintf("the request body is over %d bytes", s.opts.MaxBody))
		return nil, false
	case err != nil:
		writeErr(w, http.StatusBadRequest, "bad_request", "reading the request body: "+err.Error())
		return nil, false
	}
	return b, true
}

// decode reads a person's request body into v.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	b, ok := s.readBody(w, r)
	if !ok {
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", "the request body is not valid JSON: "+err.Error())
		return false
	}
	return true
}

// slotWait is how long an agent's request waits for room to be processed
// before it is refused with 429.
const slotWait = 2 * time.Second

// minWeight is what the smallest request weighs in the room agents'
// requests are processed in (see acquire).
const minWeight = 64 << 10

// acquire takes room for r among the agents' requests being processed,
// waiting up to slotWait. The room is counted in bytes of request bodies
// (each weighs at least minWeight): MaxBody for every two cores. So many
// small requests are processed at once (their records are committed
// together), large ones a few at a time, and however much agents send, a
// person's requests — which take no room — are served beside a bounded
// amount of theirs. It returns the room's release (safe to call more than
// once), or nil after answering 429 (no room in time).
func (s *Server) acquire(w http.ResponseWriter, r *http.Request) func() {
	n := r.ContentLength
	if n < 0 || n > s.roomSize {
		n = s.roomSize
	}
	n = max(n, minWeight)
	ctx, cancel := context.WithTimeout(r.Context(), slotWait)
	defer cancel()
	if err := s.room.Acquire(ctx, n); err != nil {
		if r.Context().Err() == nil {
			d := &limits.Denied{Scope: "all", What: "concurrency", RetryAfter: time.Second}
			s.metrics.refused(d)
			WriteQuota(w, d)
		}
		return nil
	}
	var once sync.Once
	return func() { once.Do(func() { s.room.Release(n) }) }
}

// decodeSubmission takes a processing slot, reads an agent's request body
// into v and charges it to the quotas of the agent and session that key
// names (read from v once decoded; a body that does not decode is charged
// to the nameless agent). It returns the slot's release, which the caller
// calls once the request's work is done (before any long wait); nil means
// the request was answered (429 over a quota or with no slot, 413, 400)
// and nothing was recorded.
func (s *Server) decodeSubmission(w http.ResponseWriter, r *http.Request, v any, key func() (agent, session string)) func() {
	if d := s.opts.Quotas.Full(r.ContentLength); d != nil {
		s.metrics.refused(d)
		WriteQuota(w, d)
		return nil
	}
	release := s.acquire(w, r)
	if release == nil {
		return nil
	}
	b, ok := s.readBody(w, r)
	if !ok {
		release()
		return nil
	}
	err := json.Unmarshal(b, v)
	var agent, session string
	if err == nil {
		agent, session = key()
	}
	if d := s.opts.Quotas.Take(agent, session, int64(len(b))); d != nil {
		release()
		s.metrics.refused(d)
		WriteQuota(w, d)
		return nil
	}
	if err != nil {
		release()
		writeErr(w, http.StatusBadRequest, "bad_request", "the request body is not valid JSON: "+err.Error())
		return nil
	}
	return release
}

// Limited puts h under the submission quotas: each request is charged to
// agent and the session that session reads from the request (its body is
// read first, up to MaxBody, and handed to h unchanged). The MCP gateway
// over HTTP is mounted so.
func (s *Server) Limited(agent string, session func(*http.Request) string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := s.opts.Quotas.Full(r.ContentLength); d != nil {
			s.metrics.refused(d)
			WriteQuota(w, d)
			return
		}
		release := s.acquire(w, r)
		if release == nil {
			return
		}
		b, ok := s.readBody(w, r)
		release() // the gateway's calls may wait for a person: no slot held
		if !ok {
			return
		}
		if d := s.opts.Quotas.Take(agent, session(r), int64(len(b))); d != nil {
			s.metrics.refused(d)
			WriteQuota(w, d)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	})
}
