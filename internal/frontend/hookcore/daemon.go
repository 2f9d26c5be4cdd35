package hookcore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/apiauth"
	"github.com/overseer-dev/overseer/internal/guard/secrets"
	"github.com/overseer-dev/overseer/internal/proc"
	"github.com/overseer-dev/overseer/internal/smallfile"
	"github.com/overseer-dev/overseer/internal/store"
)

// The lean hook's client of a running daemon: the few calls of the API a
// pre-call hook makes (submit, wait for the outcome, withdraw, keep,
// report model use), in the API's wire format (docs/api.md). Package
// client is the full client; the end-to-end tests of the lean hook run it
// against the real daemon, so the two cannot drift apart unnoticed.

// Files in Overseer's home (the kernel's AddrFile and TokenFile).
const (
	AddrFile  = "daemon.json"
	TokenFile = "token"
)

// ErrNoDaemon means no daemon is named in the home's address file, or it
// could not even be connected to (nothing was sent).
var ErrNoDaemon = errors.New("no Overseer daemon is running")

// Conn is a connection to the daemon's API.
type Conn struct {
	Addr  string // host:port, e.g. 127.0.0.1:7777
	Token string
}

// Dial returns a client of the daemon named in home's address file. It
// returns ErrNoDaemon when none is named, and also when the daemon serves
// TLS: the lean hook leaves that to the full one.
func Dial(home string) (*Conn, error) {
	b, err := smallfile.Read(filepath.Join(home, AddrFile))
	if err != nil {
		return nil, ErrNoDaemon
	}
	info, err := decodeAddr(b)
	if err != nil || info.Addr == "" || info.TLS {
		return nil, ErrNoDaemon
	}
	tok, _ := smallfile.Read(filepath.Join(home, TokenFile))
	if strings.TrimSpace(string(tok)) == "" {
		// Without the token the daemon's answers cannot be told from
		// another server's (package apiauth).
		return nil, ErrNoDaemon
	}
	return &Conn{Addr: info.Addr, Token: strings.TrimSpace(string(tok))}, nil
}

// APIError is an error the daemon returned.
type APIError struct {
	Status     int
	Code       string `json:"code"`
	Message    string `json:"message"`
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("daemon: %s (%s, HTTP %d)", e.Message, e.Code, e.Status)
}

// maxAnswer bounds an answer of the daemon the hook reads.
const maxAnswer = 16 << 20

func (c *Conn) do(ctx context.Context, method, path string, body, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	resp, err := c.send(ctx, method, path, b)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(resp, out); err != nil {
		return fmt.Errorf("reading the daemon's answer: %w", err)
	}
	return nil
}

// send sends one request with body b (nil: none) and returns the body of
// a successful answer; any other answer is an error.
func (c *Conn) send(ctx context.Context, method, path string, b []byte) ([]byte, error) {
	status, ra, resp, err := roundTrip(ctx, c.Addr, method, path, c.Token, b)
	if err != nil {
		return nil, err
	}
	if status >= 300 {
		var e struct {
			Error APIError `json:"error"`
		}
		var wait time.Duration
		if secs, err := strconv.Atoi(ra); err == nil && secs > 0 {
			wait = time.Duration(secs) * time.Second
		}
		if json.Unmarshal(resp, &e) == nil && e.Error.Message != "" {
			e.Error.Status, e.Error.RetryAfter = status, wait
			return nil, &e.Error
		}
		return nil, &APIError{Status: status, Code: "http", Message: strings.TrimSpace(string(resp)), RetryAfter: wait}
	}
	return resp, nil
}

// answer sends one request and decodes the daemon's answer to it.
func (c *Conn) answer(ctx context.Context, method, path string, b []byte) (*Answer, error) {
	resp, err := c.send(ctx, method, path, b)
	if err != nil {
		return nil, err
	}
	var o Answer
	if err := decodeAnswer(resp, &o); err != nil {
		return nil, fmt.Errorf("reading the daemon's answer: %w", err)
	}
	return &o, nil
}

// Answer is the API's view of an action's outcome.
type Answer struct {
	ActionID string          `json:"action_id"`
	Decision string          `json:"decision"` // allow, deny, pending
	Level    action.Level    `json:"level"`
	Reason   string          `json:"reason"`
	Verdict  *action.Verdict `json:"verdict,omitempty"`
	Approval *store.Approval `json:"approval,omitempty"`
	Facts    *action.Facts   `json:"facts,omitempty"`
}

// Asker says who holds a call while a person decides.
type Asker struct {
	Kind  string `json:"kind,omitempty"`
	PID   int    `json:"pid,omitempty"`
	Start string `json:"start,omitempty"`
	Host  string `json:"host,omitempty"`
	Wait  string `json:"wait,omitempty"`
	Hold  bool   `json:"hold,omitempty"`
	Key   string `json:"key,omitempty"`
}

// Submit submits a on behalf of asker with the fingerprints of the caller's
// secret values; the answer comes at once (the wait is Status's) and
// carries the facts Overseer derived.
func (c *Conn) Submit(ctx context.Context, a *action.Action, asker *Asker, known []secrets.ValueFP) (*Answer, error) {
	b, err := encodeSubmit(submitBody{a, asker, known})
	if err != nil {
		return nil, err
	}
	return c.answer(ctx, "POST", "/api/v1/actions?facts=1", b)
}

// Status reads an action's outcome, waiting up to wait while it is pending.
func (c *Conn) Status(ctx context.Context, actionID string, wait time.Duration) (*Answer, error) {
	path := "/api/v1/actions/" + url.PathEscape(actionID)
	if wait > 0 {
		path += "?wait=" + url.QueryEscape(wait.String())
	}
	return c.answer(ctx, "GET", path, nil)
}

// Withdraw gives up waiting for a person's answer to action actionID.
func (c *Conn) Withdraw(ctx context.Context, actionID, key, reason string) error {
	return c.do(ctx, "POST", "/api/v1/actions/"+url.PathEscape(actionID)+"/withdraw",
		map[string]string{"key": key, "reason": reason}, nil)
}

// Keep asks the daemon to keep the previous content of the files a judged
// action is about to change (for `overseer undo`).
func (c *Conn) Keep(ctx context.Context, actionID string) error {
	return c.do(ctx, "POST", "/api/v1/actions/"+url.PathEscape(actionID)+"/keep", nil, nil)
}

// ReportUsage reports a session's cumulative model use.
func (c *Conn) ReportUsage(ctx context.Context, agent, session string, u TranscriptUse) error {
	return c.do(ctx, "POST", "/api/v1/usage", map[string]any{"agent": agent, "session": session, "model": u.Model,
		"input_tokens": u.Input, "output_tokens": u.Output, "cumulative": true}, nil)
}

// NotConnected reports whether err is a failure to connect at all (nothing
// was sent): the daemon named in the address file is not running.
func NotConnected(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && errors.Is(err, syscall.ECONNREFUSED)
}

// Unreached reports whether err means the daemon was not reached: nothing
// listens at its address (NotConnected), or the server there did not prove
// it is the daemon (apiauth.ErrImpostor: it was sent nothing it can use,
// and its answer is not taken).
func Unreached(err error) bool { return NotConnected(err) || errors.Is(err, apiauth.ErrImpostor) }

// Reasons the hook gives when it stops waiting.
const (
	ReasonHandedToAgent = "the call was handed to the agent's own permission prompt"
	ReasonInterrupted   = "the hook was interrupted: the agent stopped waiting for the answer"
)

// ErrNoAnswer means no person answered within the hook's wait.
var ErrNoAnswer = errors.New("no person answered in time")

// APIMaxWait is the longest single long-poll the daemon accepts.
const APIMaxWait = 2 * time.Minute

// redialEvery is how often a held call looks for a daemon that stopped
// answering.
const redialEvery = 500 * time.Millisecond

// Waiter submits a call to the daemon and holds it while a person decides.
type Waiter struct {
	C *Conn
	// Redial finds the daemon again when it stops answering while a call
	// is held; nil: the first failure denies the call.
	Redial func() (*Conn, error)
	// Known are the fingerprints of the agent's secret values, sent with
	// the call.
	Known []secrets.ValueFP
	Now   func() time.Time
	// Analysed is set by Decide when the daemon sent the facts it derived
	// (for a shell command: its analysis, possibly finding nothing).
	Analysed bool
}

// Decide submits a and, while a person has not answered, long-polls its
// status until the answer or maxWait (see hooks.Daemon.Decide, whose
// behaviour it shares). With askConfirm a confirm verdict is handed to the
// agent's prompt at once. An error means the call must not run;
// ErrNoDaemon (wrapped) means the daemon could not even be connected to.
func (w *Waiter) Decide(ctx context.Context, a *action.Action, maxWait time.Duration, askConfirm bool) (Decision, error) {
	now := w.Now
	if now == nil {
		now = time.Now
	}
	deadline := now().Add(maxWait)
	asker, key := SelfAsker(maxWait)
	o, err := w.C.Submit(ctx, a, asker, w.Known)
	for ra := retryAfter(err); ra > 0 && now().Add(ra).Before(deadline); ra = retryAfter(err) {
		select {
		case <-ctx.Done():
			return Decision{}, ctx.Err()
		case <-time.After(ra):
		}
		o, err = w.C.Submit(ctx, a, asker, w.Known)
	}
	if err != nil {
		if Unreached(err) {
			return Decision{}, fmt.Errorf("%w: %v", ErrNoDaemon, err)
		}
		return Decision{}, fmt.Errorf("submitting the call to the Overseer daemon: %w", err)
	}
	if o.ActionID != "" {
		a.ID = o.ActionID
	}
	if o.Facts != nil && a.Kind == action.KindShell {
		a.Facts, w.Analysed = *o.Facts, true
	}
	for o.Decision == "pending" {
		if askConfirm && o.Level == action.Confirm {
			w.withdraw(a.ID, key, ReasonHandedToAgent)
			return Decision{Outcome: Ask, ActionID: a.ID, Level: o.Level,
				Reason: "Overseer asks a person to confirm this call: " + reasonOf(o)}, nil
		}
		left := deadline.Sub(now())
		if left <= 0 {
			w.withdraw(a.ID, key, fmt.Sprintf("the hook's wait (max_wait %s) ran out", maxWait))
			return Decision{ActionID: a.ID, Level: o.Level, Reason: NoAnswerReason(maxWait, o.Approval)}, nil
		}
		o, err = w.status(ctx, a.ID, left, deadline, now)
		if err != nil {
			if ctx.Err() != nil {
				w.withdraw(a.ID, key, ReasonInterrupted)
			}
			return Decision{}, err
		}
	}
	return OutcomeDecision(a.ID, o), nil
}

func retryAfter(err error) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == 429 {
		return ae.RetryAfter
	}
	return 0
}

func (w *Waiter) status(ctx context.Context, id string, left time.Duration, deadline time.Time, now func() time.Time) (*Answer, error) {
	for {
		o, err := w.C.Status(ctx, id, min(left, APIMaxWait))
		if err == nil {
			return o, nil
		}
		var apiErr *APIError
		if ctx.Err() != nil || errors.As(err, &apiErr) || w.Redial == nil {
			return nil, fmt.Errorf("waiting for a person's answer (the daemon stopped answering): %w", err)
		}
		for {
			if left = deadline.Sub(now()); left <= 0 {
				return nil, fmt.Errorf("waiting for a person's answer: the daemon stopped answering and was not back within the wait: %w", err)
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for a person's answer: %w", ctx.Err())
			case <-time.After(min(redialEvery, left)):
			}
			if c, derr := w.Redial(); derr == nil {
				w.C = c
				break
			}
		}
	}
}

func (w *Waiter) withdraw(id, key, reason string) {
	if id == "" || key == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), WithdrawTimeout)
	defer cancel()
	_ = w.C.Withdraw(ctx, id, key, reason)
}

// SelfAsker describes this hook process to the daemon as the asker of a
// call it holds up to wait, with a fresh key to withdraw it.
func SelfAsker(wait time.Duration) (*Asker, string) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return &Asker{Kind: "hook", Wait: wait.String(), Hold: true}, ""
	}
	key := hex.EncodeToString(b[:])
	a := &Asker{Kind: "hook", Wait: wait.String(), Hold: true, Key: key}
	if id, ok := proc.Self(); ok {
		a.PID, a.Start, a.Host = id.PID, id.Start, id.Host
	}
	return a, key
}

func reasonOf(o *Answer) string {
	if o.Verdict != nil {
		return o.Verdict.Summary()
	}
	return o.Reason
}

// NoAnswerReason is the reason of a call nobody answered within wait.
func NoAnswerReason(wait time.Duration, apr *store.Approval) string {
	msg := fmt.Sprintf("denied: %v after %s", ErrNoAnswer, wait)
	if apr != nil {
		msg += fmt.Sprintf(" (approval %s)", apr.ID)
	}
	return msg
}

// OutcomeDecision turns the daemon's final outcome into a decision: only
// "allow" lets the call run.
func OutcomeDecision(id string, o *Answer) Decision {
	d := Decision{ActionID: id, Level: o.Level}
	switch {
	case o.Decision == "allow":
		d.Outcome = Allow
		d.Reason = "allowed (" + o.Level.String() + ")"
		if o.Approval != nil {
			d.Reason = o.Reason
		}
	case o.Decision != "deny":
		d.Reason = fmt.Sprintf("denied: the daemon answered %q", o.Decision)
	case o.Approval != nil:
		d.Reason = o.Reason
		d.Stop = o.Approval.Status == store.StatusAborted
	case o.Verdict != nil:
		d.Reason = "blocked: " + o.Verdict.Summary()
		d.Stop = o.Verdict.Stop
	default:
		d.Reason = "denied: " + o.Reason
	}
	return d
}
