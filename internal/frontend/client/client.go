// Package client talks to a running Overseer daemon over its HTTP API. The
// CLI, the hooks and the terminal UI use it; it finds the daemon through
// the address file the daemon writes into Overseer's home directory.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/apiauth"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// ErrNoDaemon means no daemon is running (or it does not answer).
var ErrNoDaemon = errors.New("no Overseer daemon is running (start one with `overseer serve`)")

// AddrInfo is the content of the daemon's address file.
type AddrInfo struct {
	Addr    string    `json:"addr"` // host:port
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// TLS is set when the daemon serves HTTPS with the certificate in
	// CertFile; clients pin that exact certificate.
	TLS      bool   `json:"tls,omitempty"`
	CertFile string `json:"cert_file,omitempty"`
}

// pinnedClient returns an HTTP client that accepts only the certificate in
// certFile: the daemon's own, whatever name or address it is reached by.
func pinnedClient(certFile string) (*http.Client, error) {
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s holds no PEM certificate", certFile)
	}
	want := block.Bytes
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // replaced by the pin below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !bytes.Equal(raw[0], want) {
				return errors.New("the daemon's certificate is not the one it announced")
			}
			return nil
		},
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}, nil
}

// Client is an API client.
type Client struct {
	Base  string // e.g. http://127.0.0.1:7777
	Token string
	HTTP  *http.Client
}

// Discover finds the daemon of home from its address file and token, and
// checks that it answers. It returns ErrNoDaemon when none runs.
func Discover(ctx context.Context, home string) (*Client, error) {
	b, err := os.ReadFile(filepath.Join(home, "daemon.json"))
	if err != nil {
		return nil, ErrNoDaemon
	}
	var info AddrInfo
	if err := json.Unmarshal(b, &info); err != nil || info.Addr == "" {
		return nil, ErrNoDaemon
	}
	tok, _ := os.ReadFile(filepath.Join(home, "token"))
	c := &Client{Base: "http://" + info.Addr, Token: strings.TrimSpace(string(tok)), HTTP: &http.Client{}}
	if info.TLS {
		hc, err := pinnedClient(info.CertFile)
		if err != nil {
			return nil, fmt.Errorf("%w (its TLS certificate: %v)", ErrNoDaemon, err)
		}
		c.Base, c.HTTP = "https://"+info.Addr, hc
	}
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.do(hctx, "GET", "/healthz", nil, nil); err != nil {
		if errors.Is(err, apiauth.ErrImpostor) {
			// Not this home's daemon (a stale address file, and another
			// server on its port): it gets nothing, and is not used.
			return nil, fmt.Errorf("%w (%v)", ErrNoDaemon, err)
		}
		return nil, fmt.Errorf("%w (%s does not answer: %v)", ErrNoDaemon, info.Addr, err)
	}
	return c, nil
}

// APIError is an error the daemon returned.
type APIError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfter is the daemon's Retry-After (a 429: over a submission
	// quota, or a wrong credential throttled).
	RetryAfter time.Duration `json:"-"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("daemon: %s (%s, HTTP %d)", e.Message, e.Code, e.Status)
}

// Sign signs req with the client's token (package apiauth: the token
// itself is never sent) and returns the check of its answer: an answer
// without the daemon's proof is refused with an error wrapping
// apiauth.ErrImpostor and must not be read. A client without a token
// neither signs nor checks.
func (c *Client) Sign(req *http.Request) (check func(*http.Response) error) {
	if c.Token == "" {
		return func(*http.Response) error { return nil }
	}
	h, nonce := apiauth.Sign(c.Token, req.Method, req.URL.RequestURI(), time.Now())
	req.Header.Set("Authorization", h)
	return func(resp *http.Response) error {
		if !apiauth.CheckProof(c.Token, nonce, resp.Header.Get(apiauth.ProofHeader)) {
			return fmt.Errorf("%w (%s answered HTTP %d)", apiauth.ErrImpostor, c.Base, resp.StatusCode)
		}
		return nil
	}
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	check := c.Sign(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := check(resp); err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error APIError `json:"error"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var ra time.Duration
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			ra = time.Duration(secs) * time.Second
		}
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			e.Error.Status, e.Error.RetryAfter = resp.StatusCode, ra
			return &e.Error
		}
		return &APIError{Status: resp.StatusCode, Code: "http", Message: strings.TrimSpace(string(b)), RetryAfter: ra}
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Outcome mirrors the API's view of an action's outcome.
type Outcome struct {
	ActionID string          `json:"action_id"`           // Overseer's id
	ClientID string          `json:"client_id,omitempty"` // the caller's own id, as it sent it
	Decision string          `json:"decision"`            // allow, deny, pending
	Level    action.Level    `json:"level"`
	Reason   string          `json:"reason"`
	Verdict  *action.Verdict `json:"verdict,omitempty"`
	Approval *store.Approval `json:"approval,omitempty"`
	// StatusToken reads this action's outcome without the daemon's token.
	StatusToken string `json:"status_token,omitempty"`
	// Facts are the facts Overseer derived, when asked for (SubmitOptions.Facts).
	Facts *action.Facts `json:"facts,omitempty"`
}

// Submit submits an action; with wait > 0 the daemon holds the call while a
// person decides, up to wait.
func (c *Client) Submit(ctx context.Context, a *action.Action, wait time.Duration) (*Outcome, error) {
	return c.SubmitBy(ctx, a, nil, wait)
}

// Asker says who holds a call while a person decides (the API's "asker"):
// the daemon withdraws the request once the asker is gone.
type Asker struct {
	Kind  string `json:"kind,omitempty"`
	PID   int    `json:"pid,omitempty"`
	Start string `json:"start,omitempty"`
	Host  string `json:"host,omitempty"`
	Wait  string `json:"wait,omitempty"` // how long from now it waits at most, e.g. "10m0s"
	Hold  bool   `json:"hold,omitempty"` // it keeps a long-poll open while it waits
	Key   string `json:"key,omitempty"`  // its secret for Withdraw
}

// SubmitBy submits an action on behalf of asker (nil: unsaid).
func (c *Client) SubmitBy(ctx context.Context, a *action.Action, asker *Asker, wait time.Duration) (*Outcome, error) {
	return c.SubmitKnown(ctx, a, asker, nil, wait)
}

// SubmitKnown is SubmitBy with the fingerprints of the caller's own secret
// values (kernel.EnvFingerprints), which the call is also scanned for.
func (c *Client) SubmitKnown(ctx context.Context, a *action.Action, asker *Asker, known []kernel.KnownValue, wait time.Duration) (*Outcome, error) {
	return c.SubmitWith(ctx, a, SubmitOptions{Asker: asker, Known: known, Wait: wait})
}

// SubmitOptions tune SubmitWith.
type SubmitOptions struct {
	Asker *Asker              // who holds the call (nil: unsaid)
	Known []kernel.KnownValue // fingerprints of the caller's secret values
	Wait  time.Duration       // > 0: hold the call while a person decides, up to Wait
	Facts bool                // return the facts Overseer derived (Outcome.Facts)
}

// SubmitWith submits an action with options.
func (c *Client) SubmitWith(ctx context.Context, a *action.Action, opts SubmitOptions) (*Outcome, error) {
	var o Outcome
	asker, known := opts.Asker, opts.Known
	q := url.Values{}
	if opts.Wait > 0 {
		q.Set("wait", opts.Wait.String())
	}
	if opts.Facts {
		q.Set("facts", "1")
	}
	path := "/api/v1/actions"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var body any = a
	if asker != nil || len(known) > 0 {
		body = struct {
			*action.Action
			Asker       *Asker              `json:"asker,omitempty"`
			KnownValues []kernel.KnownValue `json:"known_values,omitempty"`
		}{a, asker, known}
	}
	if err := c.do(ctx, "POST", path, body, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// Withdraw gives up waiting for a person's answer to action actionID: its
// pending request is withdrawn. key is the asker's key sent with the action.
func (c *Client) Withdraw(ctx context.Context, actionID, key, reason string) error {
	return c.do(ctx, "POST", "/api/v1/actions/"+url.PathEscape(actionID)+"/withdraw",
		map[string]string{"key": key, "reason": reason}, nil)
}

// Status reads an action's outcome, waiting up to wait while it is pending.
func (c *Client) Status(ctx context.Context, actionID string, wait time.Duration) (*Outcome, error) {
	var o Outcome
	path := "/api/v1/actions/" + url.PathEscape(actionID)
	if wait > 0 {
		path += "?wait=" + url.QueryEscape(wait.String())
	}
	if err := c.do(ctx, "GET", path, nil, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// Approvals lists approvals with a status ("pending" by default, "all").
func (c *Client) Approvals(ctx context.Context, status string) ([]*store.Approval, error) {
	var list []*store.Approval
	path := "/api/v1/approvals"
	if status != "" {
		path += "?status=" + url.QueryEscape(status)
	}
	return list, c.do(ctx, "GET", path, nil, &list)
}

// AnswerRequest is a person's answer.
type AnswerRequest struct {
	Who      string          `json:"who"`
	Channel  string          `json:"channel,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Remember string          `json:"remember,omitempty"`
	Rule     json.RawMessage `json:"rule,omitempty"`
}

// AnswerResponse is the daemon's reply to an answer.
type AnswerResponse struct {
	Approval *store.Approval `json:"approval"`
	Applied  bool            `json:"applied"`
	Warning  string          `json:"warning,omitempty"`
	Note     string          `json:"note,omitempty"`
}

// Answer approves, denies or aborts an approval.
func (c *Client) Answer(ctx context.Context, id, decision string, req AnswerRequest) (*AnswerResponse, error) {
	var r AnswerResponse
	if err := c.do(ctx, "POST", "/api/v1/approvals/"+url.PathEscape(id)+"/"+decision, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Result reports what an allowed action did.
func (c *Client) Result(ctx context.Context, r any) error {
	return c.do(ctx, "POST", "/api/v1/results", r, nil)
}

// Keep asks the daemon to keep the previous content of the files a judged
// action is about to change (for `overseer undo`). It needs the token.
func (c *Client) Keep(ctx context.Context, actionID string) error {
	return c.do(ctx, "POST", "/api/v1/actions/"+url.PathEscape(actionID)+"/keep", nil, nil)
}
