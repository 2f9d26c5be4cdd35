package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// Controls serves the hybrid controls of unattended hours: anomaly rules,
// detected anomalies and their rollbacks, auto-rules, their log, templates
// and dry runs. The HTTP API and the web console share these handlers;
// every change is audited by the kernel as the person who made it.
type Controls struct {
	k       *kernel.Kernel
	maxBody int64
}

// NewControls serves k's controls.
func NewControls(k *kernel.Kernel) *Controls { return &Controls{k: k, maxBody: 1 << 20} }

func (c *Controls) body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, c.maxBody))
	if err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", "reading the body: "+err.Error())
		return nil, false
	}
	return b, true
}

// withWho splits an optional "who" off a JSON object body, so that the
// rest decodes strictly as a rule.
func withWho(b []byte) (rest []byte, who string, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, "", err
	}
	if raw, ok := m["who"]; ok {
		if err := json.Unmarshal(raw, &who); err != nil {
			return nil, "", err
		}
		delete(m, "who")
	}
	rest, err = json.Marshal(m)
	return rest, who, err
}

func (c *Controls) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeErr(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, autorule.ErrInvalid):
		writeErr(w, http.StatusUnprocessableEntity, "invalid_rule", err.Error())
	case errors.Is(err, kernel.ErrControls):
		writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
	default:
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
	}
}

// ListAutoRules answers the auto-rules, by priority.
func (c *Controls) ListAutoRules(w http.ResponseWriter, r *http.Request) {
	rs, err := c.k.AutoRules(r.Context())
	if err != nil {
		c.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rs)
}

// GetAutoRule answers one auto-rule.
func (c *Controls) GetAutoRule(w http.ResponseWriter, r *http.Request) {
	rule, err := c.k.AutoRule(r.Context(), r.PathValue("id"))
	if err != nil {
		c.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rule)
}

// PutAutoRule adds (POST) or replaces (PUT, with the id in the path) an
// auto-rule, as the body's "who" unless fixed, else as who.
func (c *Controls) PutAutoRule(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	putRule(c, w, r, who, fixed, autoRuleKind)
}

// DeleteAutoRule removes an auto-rule as who.
func (c *Controls) DeleteAutoRule(w http.ResponseWriter, r *http.Request, who string) {
	c.deleteRule(w, r, who, (*kernel.Kernel).DeleteAutoRule)
}

// RuleLog answers the auto-rules that fired (?rule=ID&limit=N), newest
// first.
func (c *Controls) RuleLog(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	recs, err := c.k.RuleLog(r.Context(), r.URL.Query().Get("rule"), min(max(limit, 0), 5000))
	if err != nil {
		c.fail(w, err)
		return
	}
	type entry struct {
		Seq      int64             `json:"seq"`
		Time     string            `json:"time"`
		ActionID string            `json:"action_id,omitempty"`
		Agent    string            `json:"agent,omitempty"`
		Tool     string            `json:"tool,omitempty"`
		Fired    *kernel.RuleFired `json:"fired"`
	}
	out := make([]entry, 0, len(recs))
	for _, rec := range recs {
		var f kernel.RuleFired
		if json.Unmarshal(rec.Data, &f) != nil {
			continue
		}
		out = append(out, entry{Seq: rec.Seq, Time: rec.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			ActionID: rec.ActionID, Agent: rec.Agent, Tool: rec.Tool, Fired: &f})
	}
	writeJSON(w, http.StatusOK, out)
}

// DryRunRequest is the body of a dry run: the rule (not saved) and how
// many days of the audit trail to replay (default 7).
type DryRunRequest struct {
	Rule json.RawMessage `json:"rule"`
	Days int             `json:"days,omitempty"`
}

func (c *Controls) dryRunBody(w http.ResponseWriter, r *http.Request) (*DryRunRequest, bool) {
	b, ok := c.body(w, r)
	if !ok {
		return nil, false
	}
	var req DryRunRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || len(req.Rule) == 0 {
		writeErr(w, http.StatusBadRequest, "bad_request", `the body is {"rule": {…}, "days": N}`)
		return nil, false
	}
	return &req, true
}

// TestAutoRule replays a rule over the audit trail and answers what it
// would have done, call by call. Nothing is saved.
func (c *Controls) TestAutoRule(w http.ResponseWriter, r *http.Request) {
	testRule(c, w, r, autoRuleKind)
}

// Templates answers the ready-made rules.
func (c *Controls) Templates(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, autorule.Templates())
}

// AddTemplate adds a template's rules as who.
func (c *Controls) AddTemplate(w http.ResponseWriter, r *http.Request, who string) {
	rs, err := c.k.AddTemplate(r.Context(), r.PathValue("name"), who)
	if err != nil {
		c.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, rs)
}

// ListAnomalyRules answers the anomaly rules.
func (c *Controls) ListAnomalyRules(w http.ResponseWriter, r *http.Request) {
	rs, err := c.k.AnomalyRules(r.Context())
	if err != nil {
		c.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rs)
}

// GetAnomalyRule answers one anomaly rule.
func (c *Controls) GetAnomalyRule(w http.ResponseWriter, r *http.Request) {
	rule, err := c.k.AnomalyRule(r.Context(), r.PathValue("id"))
	if err != nil {
		c.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rule)
}

// PutAnomalyRule adds (POST) or replaces (PUT) an anomaly rule.
func (c *Controls) PutAnomalyRule(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	putRule(c, w, r, who, fixed, anomalyRuleKind)
}

// DeleteAnomalyRule removes an anomaly rule as who.
func (c *Controls) DeleteAnomalyRule(w http.ResponseWriter, r *http.Request, who string) {
	c.deleteRule(w, r, who, (*kernel.Kernel).DeleteAnomalyRule)
}

// TestAnomalyRule replays an anomaly rule over the audit trail.
func (c *Controls) TestAnomalyRule(w http.ResponseWriter, r *http.Request) {
	testRule(c, w, r, anomalyRuleKind)
}

// AnomalyEvents answers the detected anomalies with their rollbacks (the
// timeline and the rollback history), newest first.
func (c *Controls) AnomalyEvents(w http.ResponseWriter, r *http.Request) {
	evs, err := c.k.AnomalyEvents(r.Context())
	if err != nil {
		c.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, evs)
}

// AnomalyEvent answers one detected anomaly.
func (c *Controls) AnomalyEvent(w http.ResponseWriter, r *http.Request) {
	ev, err := c.k.AnomalyEvent(r.Context(), r.PathValue("id"))
	if err != nil {
		c.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ev)
}

// RollbackRequest is the body of a manual rollback.
type RollbackRequest struct {
	Depth int    `json:"depth,omitempty"`
	Who   string `json:"who,omitempty"`
}

// Rollback rolls back, as a person, the last reversible actions of the
// agent of an anomaly (up to the anomaly's time).
func (c *Controls) Rollback(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	var req RollbackRequest
	if r.ContentLength != 0 {
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, c.maxBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) {
			writeErr(w, http.StatusBadRequest, "bad_request", "the request body is not valid: "+err.Error())
			return
		}
	}
	if req.Who != "" && !fixed {
		who = req.Who
	}
	rb, err := c.k.RollbackAnomaly(r.Context(), r.PathValue("id"), req.Depth, who)
	if err != nil && rb == nil {
		c.fail(w, err)
		return
	}
	resp := map[string]any{"rollback": rb}
	if err != nil {
		resp["errors"] = err.Error()
	}
	writeJSON(w, http.StatusOK, resp)
}

// ruleKind is what the handlers that change and dry-run a kind of rule
// (auto-rules, anomaly rules) need to know of it.
type ruleKind[R any] struct {
	decode func([]byte) (R, error)
	setID  func(r *R, id string)
	put    func(k *kernel.Kernel, ctx context.Context, r R, who string) (*R, error)
	dryRun func(k *kernel.Kernel, ctx context.Context, r R, days int) (*kernel.ControlDryRun, error)
}

var (
	autoRuleKind = ruleKind[autorule.Rule]{decode: autorule.DecodeRule, setID: func(r *autorule.Rule, id string) { r.ID = id },
		put: (*kernel.Kernel).PutAutoRule, dryRun: (*kernel.Kernel).DryRunAutoRule}
	anomalyRuleKind = ruleKind[autorule.AnomalyRule]{decode: autorule.DecodeAnomalyRule,
		setID: func(r *autorule.AnomalyRule, id string) { r.ID = id },
		put:   (*kernel.Kernel).PutAnomalyRule, dryRun: (*kernel.Kernel).DryRunAnomalyRule}
)

// putRule adds (POST) or replaces (PUT, with the id in the path) a rule of
// kind, as the body's "who" unless fixed, else as who.
func putRule[R any](c *Controls, w http.ResponseWriter, r *http.Request, who string, fixed bool, kind ruleKind[R]) {
	b, ok := c.body(w, r)
	if !ok {
		return
	}
	rest, bodyWho, err := withWho(b)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", "the body is not a JSON object: "+err.Error())
		return
	}
	if bodyWho != "" && !fixed {
		who = bodyWho
	}
	rule, err := kind.decode(rest)
	if err != nil {
		c.fail(w, err)
		return
	}
	status := http.StatusCreated
	kind.setID(&rule, "")
	if id := r.PathValue("id"); id != "" {
		kind.setID(&rule, id)
		status = http.StatusOK
	}
	got, err := kind.put(c.k, r.Context(), rule, who)
	if err != nil {
		c.fail(w, err)
		return
	}
	writeJSON(w, status, got)
}

// testRule replays a rule of kind over the audit trail and answers what it
// would have done, call by call. Nothing is saved.
func testRule[R any](c *Controls, w http.ResponseWriter, r *http.Request, kind ruleKind[R]) {
	req, ok := c.dryRunBody(w, r)
	if !ok {
		return
	}
	rule, err := kind.decode(req.Rule)
	if err != nil {
		c.fail(w, err)
		return
	}
	rep, err := kind.dryRun(c.k, r.Context(), rule, req.Days)
	if err != nil {
		c.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// deleteRule removes the rule of the path with remove, as who.
func (c *Controls) deleteRule(w http.ResponseWriter, r *http.Request, who string, remove func(k *kernel.Kernel, ctx context.Context, id, who string) error) {
	if err := remove(c.k, r.Context(), r.PathValue("id"), who); err != nil {
		c.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": r.PathValue("id")})
}

// controlRoutes registers the anomaly and auto-rule endpoints (token
// required).
func (s *Server) controlRoutes() {
	h := NewControls(s.k)
	if s.opts.MaxBody > 0 {
		h.maxBody = s.opts.MaxBody
	}
	as := func(fn func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
		return s.auth(func(w http.ResponseWriter, r *http.Request) { fn(w, r, "api") })
	}
	asOpen := func(fn func(http.ResponseWriter, *http.Request, string, bool)) http.HandlerFunc {
		return s.auth(func(w http.ResponseWriter, r *http.Request) { fn(w, r, "api", false) })
	}
	m := s.r
	m.HandleFunc("GET /api/v1/anomaly/rules", AccessToken, s.auth(h.ListAnomalyRules))
	m.HandleFunc("POST /api/v1/anomaly/rules", AccessToken, asOpen(h.PutAnomalyRule))
	m.HandleFunc("POST /api/v1/anomaly/rules/test", AccessToken, s.auth(h.TestAnomalyRule))
	m.HandleFunc("GET /api/v1/anomaly/rules/{id}", AccessToken, s.auth(h.GetAnomalyRule))
	m.HandleFunc("PUT /api/v1/anomaly/rules/{id}", AccessToken, asOpen(h.PutAnomalyRule))
	m.HandleFunc("DELETE /api/v1/anomaly/rules/{id}", AccessToken, as(h.DeleteAnomalyRule))
	m.HandleFunc("GET /api/v1/anomaly/events", AccessToken, s.auth(h.AnomalyEvents))
	m.HandleFunc("GET /api/v1/anomaly/events/{id}", AccessToken, s.auth(h.AnomalyEvent))
	m.HandleFunc("POST /api/v1/anomaly/rollback/{id}", AccessToken, asOpen(h.Rollback))
	m.HandleFunc("GET /api/v1/auto-rules", AccessToken, s.auth(h.ListAutoRules))
	m.HandleFunc("POST /api/v1/auto-rules", AccessToken, asOpen(h.PutAutoRule))
	m.HandleFunc("GET /api/v1/auto-rules/log", AccessToken, s.auth(h.RuleLog))
	m.HandleFunc("POST /api/v1/auto-rules/test", AccessToken, s.auth(h.TestAutoRule))
	m.HandleFunc("GET /api/v1/auto-rules/templates", AccessToken, s.auth(h.Templates))
	m.HandleFunc("POST /api/v1/auto-rules/templates/{name}", AccessToken, as(h.AddTemplate))
	m.HandleFunc("GET /api/v1/auto-rules/{id}", AccessToken, s.auth(h.GetAutoRule))
	m.HandleFunc("PUT /api/v1/auto-rules/{id}", AccessToken, asOpen(h.PutAutoRule))
	m.HandleFunc("DELETE /api/v1/auto-rules/{id}", AccessToken, as(h.DeleteAutoRule))
}
