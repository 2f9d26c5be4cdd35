// Package httpapi serves Overseer's HTTP API (/api/v1/...) and Prometheus
// metrics (/metrics) over a kernel.
//
// Agents may submit actions and results without a credential, within the
// submission quotas (per agent session, per agent and for everyone; a
// request over a quota is refused with 429 and Retry-After). Everything
// else needs a credential: the daemon's token, which lives in Overseer's
// home directory where agents' actions cannot reach (self-protection), for
// whatever a person does; an action's own status token (returned when it is
// submitted) to read its outcome; and the scrape token, which reads the
// metrics and nothing else. Only /healthz answers everyone. Wrong
// credentials are throttled per client; the right one never is.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/apiauth"
	"github.com/overseer-dev/overseer/internal/audit"
	promreg "github.com/overseer-dev/overseer/internal/frontend/metrics"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/limits"
	"github.com/overseer-dev/overseer/internal/mcppin"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// Options configure the server.
type Options struct {
	// Token is the credential for approving and changing policy. Required.
	Token string
	// ScrapeToken reads GET /metrics and nothing else (see ScrapeTokenFile).
	// Empty: the metrics need the daemon's token.
	ScrapeToken string
	// MaxWait caps a long-poll (?wait=). Default 2 minutes.
	MaxWait time.Duration
	// MaxBody caps a request body; a larger one is refused with 413.
	// Default 4 MiB.
	MaxBody int64
	// Quotas are the submission quotas. Default: from the policy's
	// settings.limits.
	Quotas *limits.Quotas
	// Throttle slows wrong credentials. Default: limits.NewThrottle.
	Throttle *limits.Throttle
	// Alarms are shown by /healthz (and the console). Default: none raised.
	Alarms *limits.Alarms
	// LoopbackHost refuses requests whose Host header names anything but
	// a loopback address (localhost, 127.0.0.0/8, ::1): set it when the
	// daemon listens on loopback, where any other name is a web page's
	// that rebound its DNS name to 127.0.0.1 to reach the daemon as its
	// own origin.
	LoopbackHost bool
}

// Server is the HTTP API.
type Server struct {
	k       *kernel.Kernel
	opts    Options
	r       *Router
	metrics *metrics
	// room bounds the agents' requests being processed, in bytes (see
	// acquire).
	room     *semaphore.Weighted
	roomSize int64
	// signed checks the requests Overseer's clients sign (package apiauth).
	signed apiauth.Verifier
	// cop refuses browsers' cross-origin requests that change something.
	cop *http.CrossOriginProtection
}

// New builds the API server over k.
func New(k *kernel.Kernel, opts Options) (*Server, error) {
	if opts.Token == "" {
		return nil, errors.New("httpapi: a token is required")
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 2 * time.Minute
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 4 << 20
	}
	if opts.Quotas == nil {
		opts.Quotas = limits.NewQuotas(QuotaConfig(k.Engine.Policy().Settings.Limits), k.Clock)
		if k.Shared() {
			// Several instances on one database: the quotas count for the
			// fleet (credit drawn from buckets in the database).
			opts.Quotas.SetPool(k.QuotaPool)
		}
	}
	if opts.Throttle == nil {
		opts.Throttle = limits.NewThrottle(k.Clock)
	}
	if opts.Alarms == nil {
		opts.Alarms = limits.NewAlarms()
	}
	roomSize := opts.MaxBody * int64(max(1, runtime.GOMAXPROCS(0)/2))
	s := &Server{k: k, opts: opts, r: NewRouter(), metrics: newMetrics(k), room: semaphore.NewWeighted(roomSize), roomSize: roomSize,
		cop: http.NewCrossOriginProtection()}
	s.routes()
	return s, nil
}

// QuotaConfig turns the policy's limits into the quotas' configuration.
func QuotaConfig(l policy.LimitSettings) limits.Config {
	scope := func(q policy.QuotaSettings) limits.Scope {
		sc := limits.Scope{
			Requests: limits.Rate{PerMinute: float64(q.ActionsPerMinute), Burst: float64(q.Burst)},
			Bytes:    limits.Rate{PerMinute: float64(q.BytesPerMinute), Burst: float64(q.BytesPerMinute)},
		}
		if sc.Requests.Burst <= 0 {
			sc.Requests.Burst = max(1, sc.Requests.PerMinute)
		}
		return sc
	}
	return limits.Config{Session: scope(l.Session), Agent: scope(l.Agent), All: scope(l.All)}
}

// Handler returns the server's handler.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }

// signedKey marks, in a request's context, a valid signature (apiauth).
type signedKey struct{}

// serve checks a request signed by one of Overseer's clients before the
// router sees it: a valid signature (once, in its time window) counts as
// the daemon's token, and the answer carries the proof that this daemon
// holds the token, without which the client takes no answer.
//
// Before anything, it refuses what a web page in a person's browser could
// send: a request to another Host than a loopback one while the daemon
// listens on loopback (DNS rebinding), and a cross-origin request that
// changes something. The agents' endpoints take a plain-text body as JSON
// and need no credential, so any page the person opened could otherwise
// submit actions in an agent's name, report its usage (tripping its
// budget cap) or post results, with a request no preflight stops.
// Overseer's clients, the agents' hooks and curl send neither an Origin
// nor Sec-Fetch-Site, and are not affected.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.opts.LoopbackHost && !LoopbackHost(r.Host) {
		writeErr(w, http.StatusMisdirectedRequest, "host", "this daemon answers only to a loopback address (127.0.0.1, localhost, [::1])")
		return
	}
	if err := s.cop.Check(r); err != nil {
		writeErr(w, http.StatusForbidden, "cross_origin", "cross-origin requests from browsers are refused")
		return
	}
	if h := r.Header.Get("Authorization"); apiauth.Signed(h) {
		if nonce, ok := s.signed.Verify(s.opts.Token, h, r.Method, r.RequestURI, time.Now()); ok {
			w.Header().Set(apiauth.ProofHeader, apiauth.Proof(s.opts.Token, nonce))
			r = r.WithContext(context.WithValue(r.Context(), signedKey{}, true))
		}
	}
	s.r.ServeHTTP(w, r)
}

// LoopbackHost reports whether a request's Host (name or address, with or
// without a port) is a loopback one: localhost (or a name under
// .localhost), 127.0.0.0/8 or ::1.
func LoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Router is the daemon's router, so other front ends (web console, MCP over
// HTTP) mount their handlers on the same listener, each route with the
// access it needs.
func (s *Server) Router() *Router { return s.r }

// Throttle is the server's throttle of wrong credentials, which the console
// shares (its sign-in form takes the same token).
func (s *Server) Throttle() *limits.Throttle { return s.opts.Throttle }

// Alarms are the alarms the server shows.
func (s *Server) Alarms() *limits.Alarms { return s.opts.Alarms }

// Quotas are the submission quotas, which other submission paths (the MCP
// gateway over HTTP) share.
func (s *Server) Quotas() *limits.Quotas { return s.opts.Quotas }

func (s *Server) routes() {
	m := s.r
	m.HandleFunc("GET /healthz", AccessPublic, s.healthz)
	m.Handle("GET /metrics", AccessScrape, s.scrape(s.metrics.reg.Handler()))
	m.HandleFunc("GET /api/v1/routes", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.r.Routes())
	}))

	// Agent side: no credential, under the quotas.
	m.HandleFunc("POST /api/v1/actions", AccessAgent, s.submit)
	m.HandleFunc("POST /api/v1/evaluate", AccessAgent, s.submit)
	m.HandleFunc("POST /api/v1/results", AccessAgent, s.result)
	// An action's outcome: the daemon's token or the action's status token.
	m.HandleFunc("GET /api/v1/actions/{id}", AccessStatus, s.statusAuth(s.actionStatus))
	// The asker of a held call withdraws it with the key it was given.
	m.HandleFunc("POST /api/v1/actions/{id}/withdraw", AccessAgent, s.withdraw)

	// People's side: token required.
	m.HandleFunc("POST /api/v1/actions/{id}/keep", AccessToken, s.auth(s.keep))
	m.HandleFunc("GET /api/v1/approvals", AccessToken, s.auth(s.listApprovals))
	m.HandleFunc("GET /api/v1/approvals/{id}", AccessToken, s.auth(s.getApproval))
	m.HandleFunc("POST /api/v1/approvals/{id}/approve", AccessToken, s.auth(s.answer("approve")))
	m.HandleFunc("POST /api/v1/approvals/{id}/deny", AccessToken, s.auth(s.answer("deny")))
	m.HandleFunc("POST /api/v1/approvals/{id}/abort", AccessToken, s.auth(s.answer("abort")))
	m.HandleFunc("POST /api/v1/approvals/{id}/reply", AccessToken, s.auth(s.reply))
	m.HandleFunc("GET /api/v1/audit", AccessToken, s.auth(s.queryAudit))
	m.HandleFunc("GET /api/v1/audit/verify", AccessToken, s.auth(s.verifyAudit))
	m.HandleFunc("GET /api/v1/audit/export", AccessToken, s.auth(s.exportAudit))
	m.HandleFunc("GET /api/v1/policy", AccessToken, s.auth(s.getPolicy))
	m.HandleFunc("POST /api/v1/policy/rules", AccessToken, s.auth(s.addRule))
	m.HandleFunc("DELETE /api/v1/policy/rules/{id}", AccessToken, s.auth(s.deleteRule))
	m.HandleFunc("GET /api/v1/policy/history", AccessToken, s.auth(s.policyHistory))
	m.HandleFunc("POST /api/v1/policy/explain", AccessToken, s.auth(s.explain))
	m.HandleFunc("GET /api/v1/mcp/pins", AccessToken, s.auth(s.listPins))
	m.HandleFunc("POST /api/v1/mcp/pins/{server}/{tool}/accept", AccessToken, s.auth(s.acceptPin))
	s.taskRoutes()
	s.proposalRoutes()
	s.grantRoutes()
	s.agentRoutes()
	s.pauseRoutes()
	s.usageRoutes()
	s.controlRoutes()
}

// healthz answers everyone: the daemon is up, with the alarms raised (the
// database's size, for one).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	resp := map[string]any{"status": "ok"}
	if al := s.opts.Alarms.Active(); len(al) > 0 {
		resp["alarms"] = al
	}
	writeJSON(w, http.StatusOK, resp)
}

// apiError is the coded error that crosses the API.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WriteJSON writes v as the JSON body of a response that is never cached.
// Every front end serving JSON over HTTP uses it (and WriteError), so their
// responses look alike.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError writes a coded error: {"error": {"code": …, "message": …}}.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	WriteJSON(w, status, map[string]apiError{"error": {Code: code, Message: msg}})
}

var (
	writeJSON = WriteJSON
	writeErr  = WriteError
)

// waitParam parses ?wait=30s (or seconds as a number), capped.
func (s *Server) waitParam(r *http.Request) (time.Duration, error) {
	raw := r.URL.Query().Get("wait")
	if raw == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil {
		secs, err2 := strconv.ParseFloat(raw, 64)
		if err2 != nil {
			return 0, fmt.Errorf("wait=%q is not a duration (e.g. 30s)", raw)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		d = 0
	}
	return min(d, s.opts.MaxWait), nil
}

// Outcome is what an agent-side call learns about its action.
type Outcome struct {
	ActionID string       `json:"action_id"`           // Overseer's id, minted for every action
	ClientID string       `json:"client_id,omitempty"` // the caller's own id, kept as a correlation
	Decision string       `json:"decision"`            // allow, deny, pending
	Level    action.Level `json:"level"`
	Reason   string       `json:"reason"` // for the agent
	// Stop asks the agent to stop its task: it keeps repeating a call a
	// person refused.
	Stop     bool            `json:"stop,omitempty"`
	Verdict  *action.Verdict `json:"verdict,omitempty"`
	Approval *store.Approval `json:"approval,omitempty"`
	// StatusToken reads this action's outcome (GET /api/v1/actions/{id}
	// with Authorization: Bearer <status_token>); set when it is submitted.
	StatusToken string `json:"status_token,omitempty"`
	// Facts are what Overseer's analyzers derived from the action (a shell
	// command's programs and the paths it reads, writes or deletes); set
	// only when the submission asks for them (?facts=1) with the daemon's
	// token, as the agents' hooks do to keep what a call changes without
	// reading the audit log.
	Facts *action.Facts `json:"facts,omitempty"`
}

// OutcomeOf turns a verdict and approval into the agent's view.
func OutcomeOf(actionID string, v *action.Verdict, apr *store.Approval) Outcome {
	o := Outcome{ActionID: actionID, Verdict: v, Approval: apr}
	if v != nil {
		o.Level = v.Level
		o.Stop = v.Stop
		if v.Decider != nil {
			o.Reason = v.Decider.Message
		}
	}
	switch {
	case apr != nil:
		o.Level = apr.Level
		switch {
		case apr.Status == store.StatusPending:
			o.Decision = "pending"
			o.Reason = fmt.Sprintf("waiting for a person to answer approval %s", apr.ID)
		case gate.Allowed(apr):
			o.Decision = "allow"
			o.Reason = answerReason(string(apr.Status), apr.Answer)
		default:
			o.Decision = "deny"
			o.Reason = answerReason(string(apr.Status), apr.Answer)
		}
	case v != nil && v.Level.RunsWithoutPerson():
		o.Decision = "allow"
	default:
		o.Decision = "deny"
	}
	return o
}

func answerReason(status string, ans *store.Answer) string {
	if ans == nil {
		return status
	}
	msg := fmt.Sprintf("%s by %s via %s", status, ans.Who, ans.Channel)
	switch ans.Who {
	case gate.TimeoutActor:
		msg = fmt.Sprintf("no person answered in time; the default (%s) was applied", ans.Decision)
	case gate.WithdrawnActor:
		msg = "the request was withdrawn; nobody answered it"
	}
	if ans.Reason != "" {
		msg += ": " + ans.Reason
	}
	return msg
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var body submitBody
	release := s.decodeSubmission(w, r, &body, func() (string, string) { return body.Agent, body.Session })
	if release == nil {
		return
	}
	a := body.Action
	asker, err := askerOf(body.Asker, s.k.Clock.Now())
	if err != nil {
		release()
		writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	defer release()
	a.Cut = nil
	// Facts are what Overseer's analyzers derive; a caller must not supply
	// them (a forged "in_cwd" path could lower a verdict).
	a.Facts = action.Facts{}
	// Ids are Overseer's: the kernel mints one, and a caller's "id" is kept
	// as its client_id only (a reused id cannot collide with a record).
	if a.ClientID == "" {
		a.ClientID = a.ID
	}
	a.ID = ""
	wait, err := s.waitParam(r)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	ctx := kernel.WithReportedValues(r.Context(), body.KnownValues)
	if r.URL.Query().Get("dry_run") != "" {
		v := s.k.Evaluate(ctx, &a)
		o := OutcomeOf(a.ID, &v, nil)
		o.ClientID = a.ClientID
		writeJSON(w, http.StatusOK, o)
		return
	}
	sub, err := s.k.SubmitBy(ctx, &a, asker)
	if err != nil {
		// Fail closed: the action may not proceed.
		writeJSON(w, http.StatusInternalServerError, Outcome{ActionID: a.ID, ClientID: a.ClientID, Decision: "deny", Level: action.Block,
			Reason: "Overseer could not record the action, so it may not proceed: " + err.Error()})
		return
	}
	s.metrics.observe(sub.Verdict.Level, time.Since(start))
	release() // a long wait holds no processing slot
	apr := sub.Approval
	if apr != nil && wait > 0 {
		apr = s.waitFor(r.Context(), apr, wait)
	}
	o := OutcomeOf(sub.Action.ID, &sub.Verdict, apr)
	o.ClientID = sub.Action.ClientID
	o.StatusToken = s.StatusToken(sub.Action.ID)
	// The facts (resolved paths, …) are the people's side's to read, as
	// the audit log is: only with the daemon's token (the hooks have it).
	if r.URL.Query().Get("facts") != "" && s.Authorized(r) {
		f := sub.Action.Facts
		o.Facts = &f
	}
	writeJSON(w, http.StatusOK, o)
}

// waitFor long-polls an approval; on timeout of the poll it returns the
// approval as it stands (still pending).
func (s *Server) waitFor(ctx context.Context, apr *store.Approval, d time.Duration) *store.Approval {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	got, err := s.k.Wait(wctx, apr.ID)
	if err != nil || got == nil {
		return apr
	}
	return got
}

func (s *Server) actionStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	recs, err := s.k.Store.QueryAudit(r.Context(), store.AuditQuery{ActionID: id,
		Types: []string{audit.TypeVerdict, audit.TypeApprovalRequest}})
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	var v *action.Verdict
	var aprID string
	for _, rec := range recs {
		switch rec.Type {
		case audit.TypeVerdict:
			var vv action.Verdict
			if json.Unmarshal(rec.Data, &vv) == nil {
				v = &vv
			}
		case audit.TypeApprovalRequest:
			var a store.Approval
			if json.Unmarshal(rec.Data, &a) == nil {
				aprID = a.ID
			}
		}
	}
	if v == nil {
		writeErr(w, http.StatusNotFound, "not_found", "no action with id "+id)
		return
	}
	var apr *store.Approval
	if aprID != "" {
		apr, err = s.k.Gate.Get(r.Context(), aprID)
		if err != nil {
			writeErr(w, http.StatusInternalServerError, "store", err.Error())
			return
		}
		wait, err := s.waitParam(r)
		if err != nil {
			writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		if apr.Status == store.StatusPending && wait > 0 {
			apr = s.waitFor(r.Context(), apr, wait)
		}
	}
	writeJSON(w, http.StatusOK, OutcomeOf(id, v, apr))
}

// ResultRequest reports what an allowed action did.
type ResultRequest struct {
	ActionID string `json:"action_id"`
	// ClientID names the action by the caller's own id instead (the latest
	// action of the same agent and session with that client_id).
	ClientID string `json:"client_id,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Session  string `json:"session,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Output   string `json:"output"`
	IsError  bool   `json:"is_error,omitempty"`
	Intent   string `json:"intent,omitempty"`
}

func (s *Server) result(w http.ResponseWriter, r *http.Request) {
	var req ResultRequest
	release := s.decodeSubmission(w, r, &req, func() (string, string) { return req.Agent, req.Session })
	if release == nil {
		return
	}
	defer release()
	if req.ActionID == "" && req.ClientID == "" {
		writeErr(w, http.StatusBadRequest, "bad_request", "action_id (or client_id) is required")
		return
	}
	// The output is cut by the kernel; the rest is bounded here, as what is
	// stored of an action is (settings.limits.stored_bytes).
	if n := s.k.Engine.Policy().Settings.Limits.StoredBytes; n > 0 {
		for _, f := range []*string{&req.Intent, &req.Tool, &req.Agent, &req.Session, &req.ClientID} {
			if len(*f) > n/4 {
				*f = action.CutString(*f, n/4)
			}
		}
	}
	info, err := s.k.RecordResult(r.Context(), kernel.Result{ActionID: req.ActionID, ClientID: req.ClientID, Agent: req.Agent, Session: req.Session,
		Tool: req.Tool, Output: req.Output, IsError: req.IsError, Intent: req.Intent})
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) listPins(w http.ResponseWriter, r *http.Request) {
	pins, err := s.k.Pins.List(r.Context())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"pins": pins})
}

// AcceptPinRequest accepts an MCP tool's (prompt's, resource's) pending
// definition. The path names the server and the tool, the prompt, or the
// resource's URI (escaped).
type AcceptPinRequest struct {
	Hash    string `json:"hash"` // the pending definition's hash, as shown
	Who     string `json:"who"`
	Channel string `json:"channel,omitempty"`
	// Kind is tool (default), prompt, resource or resource_template.
	Kind string `json:"kind,omitempty"`
}

func (s *Server) acceptPin(w http.ResponseWriter, r *http.Request) {
	var req AcceptPinRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.Hash == "" {
		writeErr(w, http.StatusBadRequest, "bad_request", "hash (of the pending definition) is required")
		return
	}
	if req.Who == "" {
		req.Who = "api"
	}
	if req.Channel == "" {
		req.Channel = "api"
	}
	kind, err := mcppin.ParseKind(req.Kind)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	pin, err := s.k.AcceptMCP(r.Context(), r.PathValue("server"), kind, r.PathValue("tool"), req.Hash, req.Who, req.Channel)
	switch {
	case errors.Is(err, mcppin.ErrNothingToAccept):
		writeErr(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, mcppin.ErrStale):
		writeErr(w, http.StatusConflict, "stale", err.Error())
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
	default:
		writeJSON(w, http.StatusOK, pin)
	}
}

// keep keeps the previous content of the files an allowed action is about
// to change, for `overseer undo`. It needs the token: it writes to
// Overseer's home, and the adapters that call it (hooks) hold the token.
func (s *Server) keep(w http.ResponseWriter, r *http.Request) {
	err := s.k.KeepAction(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeErr(w, http.StatusNotFound, "not_found", err.Error())
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "not_kept", err.Error())
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	f := store.ApprovalFilter{Status: store.ApprovalStatus(r.URL.Query().Get("status"))}
	if f.Status == "" {
		f.Status = store.StatusPending
	}
	if f.Status == "all" {
		f.Status = ""
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil {
		f.Limit = n
	}
	list, err := s.k.Store.ListApprovals(r.Context(), f)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	if list == nil {
		list = []*store.Approval{}
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	apr, err := s.k.Gate.Get(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		writeErr(w, http.StatusNotFound, "not_found", "no approval with id "+r.PathValue("id"))
		return
	}
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct {
		*store.Approval
		Proposed policy.Rule `json:"proposed_rule"`
	}{apr, kernel.ProposeRule(apr, "approve")})
}

// AnswerRequest is the body of approve/deny/abort.
type AnswerRequest struct {
	Who      string          `json:"who"`
	Channel  string          `json:"channel,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Remember string          `json:"remember,omitempty"`
	Rule     json.RawMessage `json:"rule,omitempty"`
}

func (s *Server) answer(decision string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req AnswerRequest
		if r.ContentLength != 0 && !s.decode(w, r, &req) {
			return
		}
		if req.Who == "" {
			req.Who = "api"
		}
		if req.Channel == "" {
			req.Channel = "api"
		}
		apr, applied, err := s.k.Answer(r.Context(), r.PathValue("id"), store.Answer{
			Decision: decision, Who: req.Who, Channel: req.Channel, Reason: req.Reason,
			Remember: req.Remember, Rule: req.Rule,
		})
		WriteAnswerResult(w, r.PathValue("id"), apr, applied, err, nil)
	}
}

// ReplyRequest is a free-text answer ("ok, go ahead", "不要", "stop").
type ReplyRequest struct {
	Text    string `json:"text"`
	Who     string `json:"who"`
	Channel string `json:"channel,omitempty"`
}

// reply reads a free-text answer for its intent (English or Chinese) and
// answers with it. Text whose intent is not clear answers nothing: the
// request keeps waiting and the caller is told to say it again plainly.
func (s *Server) reply(w http.ResponseWriter, r *http.Request) {
	var req ReplyRequest
	if !s.decode(w, r, &req) {
		return
	}
	var decision string
	switch gate.ParseIntent(req.Text) {
	case gate.IntentApprove:
		decision = "approve"
	case gate.IntentReject:
		decision = "deny"
	case gate.IntentAbort:
		decision = "abort"
	default:
		writeErr(w, http.StatusUnprocessableEntity, "unclear",
			"the reply could not be read as approve, deny or abort; nothing was answered — say it plainly (yes / no / stop)")
		return
	}
	if req.Who == "" {
		req.Who = "api"
	}
	if req.Channel == "" {
		req.Channel = "api"
	}
	apr, applied, err := s.k.Answer(r.Context(), r.PathValue("id"), store.Answer{
		Decision: decision, Who: req.Who, Channel: req.Channel, Reason: req.Text})
	WriteAnswerResult(w, r.PathValue("id"), apr, applied, err, map[string]any{"decision": decision})
}

// WriteAnswerResult writes the outcome of answering approval id: 404 for an
// unknown approval, 400 when the answer was refused, otherwise 200 with the
// approval, whether this answer decided it, and a warning when something
// after the answer failed (saving a remembered rule, say). Every front end
// that takes answers over HTTP uses it, so they answer alike.
func WriteAnswerResult(w http.ResponseWriter, id string, apr *store.Approval, applied bool, err error, extra map[string]any) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeErr(w, http.StatusNotFound, "not_found", "no approval with id "+id)
		return
	case err != nil && apr == nil:
		writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	resp := map[string]any{"approval": apr, "applied": applied}
	for k, v := range extra {
		resp[k] = v
	}
	if err != nil {
		resp["warning"] = err.Error()
	}
	if !applied {
		resp["note"] = "the approval had already been answered; this answer was recorded only"
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) queryAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	aq := store.AuditQuery{ActionID: q.Get("action_id"), Agent: q.Get("agent"), Session: q.Get("session"),
		Tool: q.Get("tool"), Text: q.Get("q"), Desc: q.Get("order") != "asc"}
	if t := q.Get("type"); t != "" {
		aq.Types = strings.Split(t, ",")
	}
	aq.AfterSeq, _ = strconv.ParseInt(q.Get("after"), 10, 64)
	aq.Limit, _ = strconv.Atoi(q.Get("limit"))
	if aq.Limit <= 0 || aq.Limit > 1000 {
		aq.Limit = 100
	}
	for name, dst := range map[string]*time.Time{"since": &aq.Since, "until": &aq.Until} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				writeErr(w, http.StatusBadRequest, "bad_request", name+" must be RFC 3339 time")
				return
			}
			*dst = t
		}
	}
	recs, err := s.k.Store.QueryAudit(r.Context(), aq)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	if recs == nil {
		recs = []store.AuditRecord{}
	}
	writeJSON(w, http.StatusOK, recs)
}

func (s *Server) verifyAudit(w http.ResponseWriter, r *http.Request) {
	rep, err := audit.Verify(r.Context(), s.k.Store)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) exportAudit(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="overseer-audit.jsonl"`)
	if err := audit.Export(r.Context(), s.k.Store, store.AuditQuery{}, w); err != nil {
		// Headers are gone; end the stream with an error line.
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
	}
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) {
	stored, err := s.k.Store.ListUserRules(r.Context(), s.k.Clock.Now())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	p := s.k.Engine.Policy()
	admin := make([]policy.Rule, 0, len(p.Rules))
	for _, c := range p.Rules {
		admin = append(admin, c.Rule)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"source":   s.k.PolicyFile,
		"locked":   p.Locked,
		"defaults": p.Defaults,
		"admin":    admin,
		"user":     stored,
		"settings": p.Settings,
	})
}

// RuleRequest adds a rule to the user layer.
type RuleRequest struct {
	Rule policy.Rule `json:"rule"`
	Who  string      `json:"who"`
}

func (s *Server) addRule(w http.ResponseWriter, r *http.Request) {
	var req RuleRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.Who == "" {
		req.Who = "api"
	}
	ur, err := s.k.AddUserRule(r.Context(), req.Rule, req.Who, nil)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "invalid_rule", err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, ur)
}

func (s *Server) deleteRule(w http.ResponseWriter, r *http.Request) {
	who := r.URL.Query().Get("who")
	if who == "" {
		who = "api"
	}
	err := s.k.RemoveUserRule(r.Context(), r.PathValue("id"), who)
	if errors.Is(err, store.ErrNotFound) {
		writeErr(w, http.StatusNotFound, "not_found", "no user rule "+r.PathValue("id"))
		return
	}
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) policyHistory(w http.ResponseWriter, r *http.Request) {
	recs, err := s.k.PolicyHistory(r.Context(), 0)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	if recs == nil {
		recs = []store.AuditRecord{}
	}
	writeJSON(w, http.StatusOK, recs)
}

func (s *Server) explain(w http.ResponseWriter, r *http.Request) {
	var a action.Action
	if !s.decode(w, r, &a) {
		return
	}
	a.Facts = action.Facts{}
	writeJSON(w, http.StatusOK, s.k.Explain(r.Context(), &a))
}

// metrics are the Prometheus series the daemon exports.
type metrics struct {
	reg          *promreg.Registry
	actions      *promreg.CounterVec
	evalTime     *promreg.Histogram
	refusals     *promreg.CounterVec
	authFailures *promreg.Counter
}

func (m *metrics) refused(d *limits.Denied) { m.refusals.Inc(d.Scope, d.What) }

func newMetrics(k *kernel.Kernel) *metrics {
	r := promreg.NewRegistry()
	m := &metrics{reg: r}
	m.actions = r.NewCounterVec("overseer_actions_total", "Actions submitted, by verdict level.", "level")
	m.evalTime = r.NewHistogram("overseer_submit_seconds", "Time to judge and durably record a submitted action.",
		promreg.ExponentialBuckets(0.0001, 2, 14))
	r.NewGaugeFunc("overseer_approvals_pending", "Approvals waiting for a person.", func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		list, err := k.Store.ListApprovals(ctx, store.ApprovalFilter{Status: store.StatusPending})
		if err != nil {
			return -1
		}
		return float64(len(list))
	})
	m.refusals = r.NewCounterVec("overseer_quota_refusals_total", "Submissions refused (429) by a quota, by scope and limit.", "scope", "limit")
	m.authFailures = r.NewCounter("overseer_auth_failures_total", "Requests that presented a wrong credential.")
	r.NewGaugeFunc("overseer_database_bytes", "Size of the database: the SQLite file with its write-ahead log, or Overseer's tables in PostgreSQL.", func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := k.DatabaseSize(ctx)
		if err != nil {
			return -1
		}
		return float64(n)
	})
	return m
}

func (m *metrics) observe(l action.Level, d time.Duration) {
	m.actions.Inc(l.String())
	m.evalTime.Observe(d.Seconds())
}
