package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/undo"
)

// maxBody caps a JSON request body of the console's API.
const maxBody = 1 << 20

// The console answers JSON exactly as the API does.
var (
	writeJSON = httpapi.WriteJSON
	writeErr  = httpapi.WriteError
)

// decodeStrict decodes one JSON value from r's body; unknown fields are an
// error.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// queueItem is an approval as the queue shows it.
type queueItem struct {
	*store.Approval
	Summary  string         `json:"summary"`
	Proposed map[string]any `json:"proposed_rules"`
}

func itemOf(apr *store.Approval) queueItem {
	return queueItem{Approval: apr, Summary: apr.Verdict.Summary(), Proposed: proposedRules(apr)}
}

// queueSnapshot is the pending queue with the server's time, so the page
// can show how long each request waited and when it times out.
type queueSnapshot struct {
	Now     time.Time   `json:"now"`
	Pending []queueItem `json:"pending"`
	// More is true when more requests wait than the queue shows (the
	// oldest QueueMax are shown; answering them brings the next).
	More bool `json:"more,omitempty"`
}

// QueueMax is how many pending requests the console's queue shows at once,
// oldest first: an agent flooding the queue cannot make every refresh of
// the page read and send all of them.
const QueueMax = 100

func (c *Console) snapshot(ctx context.Context) (queueSnapshot, error) {
	list, err := c.k.Store.ListApprovals(ctx, store.ApprovalFilter{Status: store.StatusPending, Limit: QueueMax + 1})
	if err != nil {
		return queueSnapshot{}, err
	}
	more := len(list) > QueueMax
	if more {
		list = list[:QueueMax]
	}
	s := queueSnapshot{Now: c.clk.Now(), Pending: make([]queueItem, 0, len(list)), More: more}
	for _, apr := range list {
		s.Pending = append(s.Pending, itemOf(apr))
	}
	return s, nil
}

func (c *Console) apiApprovals(w http.ResponseWriter, r *http.Request, _ *session) {
	status := r.URL.Query().Get("status")
	if status == "" || status == "pending" {
		s, err := c.snapshot(r.Context())
		if err != nil {
			writeErr(w, http.StatusInternalServerError, "store", err.Error())
			return
		}
		writeJSON(w, http.StatusOK, s)
		return
	}
	f := store.ApprovalFilter{Status: store.ApprovalStatus(status), Limit: 200}
	if status == "all" {
		f.Status = ""
	}
	list, err := c.k.Store.ListApprovals(r.Context(), f)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	s := queueSnapshot{Now: c.clk.Now(), Pending: make([]queueItem, 0, len(list))}
	for _, apr := range list {
		s.Pending = append(s.Pending, itemOf(apr))
	}
	writeJSON(w, http.StatusOK, s)
}

func (c *Console) apiApproval(w http.ResponseWriter, r *http.Request, _ *session) {
	apr, err := c.k.Gate.Get(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		writeErr(w, http.StatusNotFound, "not_found", "no approval "+r.PathValue("id"))
		return
	}
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"now": c.clk.Now(), "approval": itemOf(apr)})
}

// AnswerRequest is the body of an answer from the console.
type AnswerRequest struct {
	Reason   string          `json:"reason,omitempty"`
	Remember string          `json:"remember,omitempty"`
	Rule     json.RawMessage `json:"rule,omitempty"`
}

func (c *Console) apiAnswer(w http.ResponseWriter, r *http.Request, sess *session) {
	decision := r.PathValue("decision")
	switch decision {
	case gate.DecisionApprove, gate.DecisionDeny, gate.DecisionAbort:
	default:
		writeErr(w, http.StatusNotFound, "not_found", "no such answer: "+decision)
		return
	}
	var req AnswerRequest
	if err := decodeStrict(w, r, &req); err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", "the answer is not valid JSON: "+err.Error())
		return
	}
	if len(req.Rule) > 0 && string(req.Rule) == "null" {
		req.Rule = nil
	}
	apr, applied, err := c.k.Answer(r.Context(), r.PathValue("id"), store.Answer{Decision: decision, Who: sess.Who,
		Channel: "web", Reason: req.Reason, Remember: req.Remember, Rule: req.Rule})
	httpapi.WriteAnswerResult(w, r.PathValue("id"), apr, applied, err, nil)
}

// auditItem is an audit record with what the timeline shows of it.
type auditItem struct {
	store.AuditRecord
	Summary string `json:"summary"`
	Level   string `json:"level,omitempty"`
	Source  string `json:"source,omitempty"`
	// Answer is set on answer records, which show it instead of a level.
	Answer *answerView `json:"answer,omitempty"`
	Undo   *undoInfo   `json:"undo,omitempty"`
}

// answerView is what an answer record's row shows: the outcome and who
// gave it.
type answerView struct {
	Outcome string `json:"outcome"` // approved, denied, aborted, withdrawn, expired
	Who     string `json:"who"`     // "ann via web", "timeout (default deny)", "withdrawn"
	Late    bool   `json:"late,omitempty"`
}

// answerRecord is the data of an answer record, as far as the console reads it.
type answerRecord struct {
	ApprovalID string               `json:"approval_id"`
	Status     store.ApprovalStatus `json:"status"`
	Level      action.Level         `json:"level"`
	Answer     store.Answer         `json:"answer"`
}

// answerOf reads an answer record; nil for any other.
func answerOf(rec store.AuditRecord) *answerView {
	if rec.Type != audit.TypeAnswer {
		return nil
	}
	var ar answerRecord
	if json.Unmarshal(rec.Data, &ar) != nil {
		return nil
	}
	v := &answerView{Late: !answerApplied(ar.Status, ar.Answer)}
	switch ar.Answer.Decision {
	case gate.DecisionApprove:
		v.Outcome = string(store.StatusApproved)
	case gate.DecisionAbort:
		v.Outcome = string(store.StatusAborted)
	case gate.DecisionWithdraw:
		v.Outcome = string(store.StatusWithdrawn)
	default:
		v.Outcome = string(store.StatusDenied)
	}
	switch {
	case ar.Answer.Who == gate.WithdrawnActor:
		v.Who = "nobody waits"
	case ar.Answer.Who == gate.TimeoutActor:
		v.Outcome = string(store.StatusExpired)
		v.Who = "timeout, default " + ar.Answer.Decision
	default:
		v.Who = ar.Answer.Who + " via " + ar.Answer.Channel
	}
	return v
}

// undoInfo says whether the previous content of an action's files is kept.
type undoInfo struct {
	Kept     bool `json:"kept"`
	Restored bool `json:"restored"`
}

// auditFilter is what the timeline filters on beyond the store's query.
type auditFilter struct {
	Level  action.Level
	Source string
}

func (f auditFilter) active() bool { return f.Level != action.Unset || f.Source != "" }

// parseAuditQuery reads the timeline's filters from the URL.
func parseAuditQuery(q map[string][]string) (store.AuditQuery, auditFilter, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	aq := store.AuditQuery{ActionID: get("action_id"), Agent: get("agent"), Session: get("session"),
		Tool: get("tool"), Text: get("q"), Desc: get("order") != "asc"}
	if t := get("type"); t != "" {
		aq.Types = strings.Split(t, ",")
	}
	var f auditFilter
	if l := get("level"); l != "" {
		lv, err := action.ParseLevel(l)
		if err != nil {
			return aq, f, err
		}
		f.Level = lv
	}
	f.Source = get("source")
	aq.AfterSeq, _ = strconv.ParseInt(get("after"), 10, 64)
	aq.Limit, _ = strconv.Atoi(get("limit"))
	if aq.Limit <= 0 || aq.Limit > 1000 {
		aq.Limit = 100
	}
	for name, dst := range map[string]*time.Time{"since": &aq.Since, "until": &aq.Until} {
		v := get(name)
		if v == "" {
			continue
		}
		t, err := parseTime(v)
		if err != nil {
			return aq, f, fmt.Errorf("%s: %w", name, err)
		}
		*dst = t
	}
	return aq, f, nil
}

// parseTime accepts RFC 3339, and the forms a datetime-local input sends.
func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time (use RFC 3339, e.g. 2026-01-02T15:04:05Z)", s)
}

// describe returns a record's one-line summary, level and decision source.
func describe(rec store.AuditRecord) (summary, level, source string) {
	switch rec.Type {
	case audit.TypeAction:
		var a action.Action
		if json.Unmarshal(rec.Data, &a) == nil {
			return actionLine(&a), "", ""
		}
	case audit.TypeVerdict:
		var v action.Verdict
		if json.Unmarshal(rec.Data, &v) == nil {
			src := ""
			if v.Decider != nil {
				src = string(v.Decider.Source)
			}
			return v.Summary(), v.Level.String(), src
		}
	case audit.TypeIngested:
		var in kernel.IngestedRecord
		if json.Unmarshal(rec.Data, &in) == nil {
			return fmt.Sprintf("ingested (%s:%d): %s → %s", in.Source.File, in.Source.Line, actionLine(&in.Action), in.Verdict.Summary()),
				in.Verdict.Level.String(), "ingest"
		}
	case audit.TypeIngestedResult:
		var res struct {
			IsError bool   `json:"is_error"`
			Text    string `json:"text"`
			Change  *struct {
				Path    string `json:"path"`
				Created bool   `json:"created"`
			} `json:"change"`
		}
		if json.Unmarshal(rec.Data, &res) == nil {
			sum := "ingested result: " + oneLine(res.Text, 100)
			if c := res.Change; c != nil {
				sum = "ingested result: wrote " + c.Path + " (can be rolled back)"
			}
			return sum, "", "ingest"
		}
	case audit.TypeTrust:
		var c kernel.TrustChange
		if json.Unmarshal(rec.Data, &c) == nil {
			return fmt.Sprintf("%s %s: %s → %s by %s: %s", c.Agent, c.Op+"d", c.From, c.To, c.Who, c.Reason), "", "trust"
		}
	case audit.TypeRollback:
		var rb struct{ Path, Who, Channel string }
		if json.Unmarshal(rec.Data, &rb) == nil {
			return fmt.Sprintf("rolled back %s by %s via %s", rb.Path, rb.Who, rb.Channel), "", string(action.SourceHuman)
		}
	case audit.TypeApprovalRequest:
		var apr store.Approval
		if json.Unmarshal(rec.Data, &apr) == nil {
			return fmt.Sprintf("asked a person (%s), approval %s", apr.Level, apr.ID), apr.Level.String(), ""
		}
	case audit.TypeApprovalUsed:
		var u struct {
			ApprovalID string `json:"approval_id"`
		}
		if json.Unmarshal(rec.Data, &u) == nil {
			return "approval " + u.ApprovalID + " let its call through", "", ""
		}
	case audit.TypeAnswer:
		// An answer shows the answer (answerOf), not the level of the
		// request it answers.
		var ar answerRecord
		if json.Unmarshal(rec.Data, &ar) == nil {
			s := fmt.Sprintf("%s by %s via %s", ar.Answer.Decision, ar.Answer.Who, ar.Answer.Channel)
			src := string(action.SourceHuman)
			switch ar.Answer.Who {
			case gate.TimeoutActor:
				s, src = fmt.Sprintf("no answer in time: the default (%s) applied", ar.Answer.Decision), gate.TimeoutActor
			case gate.WithdrawnActor:
				s, src = "withdrawn, nobody waits for the answer (not a refusal)", gate.WithdrawnActor
			}
			if !answerApplied(ar.Status, ar.Answer) {
				s += " (late; recorded only)"
			}
			if ar.Answer.Reason != "" {
				s += ": " + ar.Answer.Reason
			}
			return s, "", src
		}
	case audit.TypeResult:
		var res struct {
			Class   string `json:"class"`
			IsError bool   `json:"is_error"`
			Output  string `json:"output"`
		}
		if json.Unmarshal(rec.Data, &res) == nil {
			return "result: " + res.Class + ": " + oneLine(res.Output, 100), "", ""
		}
	case audit.TypePolicyChange:
		var pc struct {
			Origin string       `json:"origin"`
			Op     string       `json:"op"`
			RuleID string       `json:"rule_id"`
			Reason string       `json:"reason"`
			After  action.Level `json:"after"`
		}
		if json.Unmarshal(rec.Data, &pc) == nil {
			return fmt.Sprintf("policy %s (%s) %s: %s", pc.Op, pc.Origin, pc.RuleID, pc.Reason), "", pc.Origin
		}
	}
	return oneLine(string(rec.Data), 140), "", ""
}

// answerApplied tells whether an answer record is the one that decided its
// approval. The record's own Applied flag is not reliable (the gate hands the
// kernel the answer before the store marks it), so the decision is compared
// with the status the approval ended in.
func answerApplied(status store.ApprovalStatus, ans store.Answer) bool {
	if ans.Applied {
		return true
	}
	switch ans.Decision {
	case gate.DecisionApprove:
		return status == store.StatusApproved || (status == store.StatusExpired && ans.Who == gate.TimeoutActor)
	case gate.DecisionAbort:
		return status == store.StatusAborted
	case gate.DecisionWithdraw:
		return status == store.StatusWithdrawn
	default:
		return status == store.StatusDenied || (status == store.StatusExpired && ans.Who == gate.TimeoutActor)
	}
}

// actionLine is a short account of an action: its tool and main argument.
func actionLine(a *action.Action) string {
	s := a.Tool
	if v, ok := a.Subject(); ok {
		s += ": " + v
	} else if len(a.Args) > 0 {
		s += ": " + a.ArgsLine()
	}
	return oneLine(s, 160)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}

// matches applies the filters the store cannot.
func (f auditFilter) matches(level, source string) bool {
	if f.Level != action.Unset && level != f.Level.String() {
		return false
	}
	if f.Source != "" && source != f.Source {
		return false
	}
	return true
}

func (c *Console) apiAudit(w http.ResponseWriter, r *http.Request, _ *session) {
	aq, f, err := parseAuditQuery(r.URL.Query())
	if err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	items, err := c.queryAudit(r.Context(), aq, f)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"records": items})
}

// queryAudit reads records and annotates them. With filters the store
// cannot apply, it reads up to five times the limit and filters.
func (c *Console) queryAudit(ctx context.Context, aq store.AuditQuery, f auditFilter) ([]auditItem, error) {
	limit := aq.Limit
	if f.active() {
		aq.Limit = min(limit*5, 5000)
	}
	recs, err := c.k.Store.QueryAudit(ctx, aq)
	if err != nil {
		return nil, err
	}
	items := make([]auditItem, 0, min(len(recs), limit))
	undoSeen := map[string]*undoInfo{}
	for _, rec := range recs {
		sum, lvl, src := describe(rec)
		if !f.matches(lvl, src) {
			continue
		}
		it := auditItem{AuditRecord: rec, Summary: sum, Level: lvl, Source: src, Answer: answerOf(rec)}
		if rec.Type == audit.TypeAction && rec.ActionID != "" {
			info, ok := undoSeen[rec.ActionID]
			if !ok {
				info = c.undoInfo(ctx, rec.ActionID)
				undoSeen[rec.ActionID] = info
			}
			it.Undo = info
		}
		items = append(items, it)
		if len(items) >= limit {
			break
		}
	}
	return items, nil
}

// undoInfo reports whether undo data is kept for an action (nil: none).
func (c *Console) undoInfo(ctx context.Context, actionID string) *undoInfo {
	u, err := c.k.Undo()
	if err != nil {
		return nil
	}
	entries, err := u.Entries(ctx, actionID)
	if err != nil || len(entries) == 0 {
		return nil
	}
	info := &undoInfo{Kept: true, Restored: true}
	for _, e := range entries {
		if e.RestoredAt.IsZero() {
			info.Restored = false
		}
	}
	return info
}

func (c *Console) apiVerify(w http.ResponseWriter, r *http.Request, _ *session) {
	rep, err := audit.Verify(r.Context(), c.k.Store)
	if err != nil && rep.Problem == "" {
		rep.Problem = err.Error()
	}
	writeJSON(w, http.StatusOK, rep)
}

func (c *Console) apiExport(w http.ResponseWriter, r *http.Request, _ *session) {
	aq, _, err := parseAuditQuery(r.URL.Query())
	if err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	aq.Desc = false
	aq.Limit = 0
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
		aq.Limit = n
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="overseer-audit.jsonl"`)
	if err := audit.Export(r.Context(), c.k.Store, aq, w); err != nil {
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
	}
}

func (c *Console) apiUndoDiff(w http.ResponseWriter, r *http.Request, _ *session) {
	id := r.PathValue("action")
	u, err := c.k.Undo()
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "undo", err.Error())
		return
	}
	entries, err := u.Entries(r.Context(), id)
	if errors.Is(err, undo.ErrNotFound) || (err == nil && len(entries) == 0) {
		writeErr(w, http.StatusNotFound, "not_found", "nothing is kept to undo action "+id)
		return
	}
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "undo", err.Error())
		return
	}
	diff, err := u.Diff(r.Context(), id)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "undo", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"action_id": id, "entries": entries, "diff": diff})
}

func (c *Console) apiUndo(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("action")
	entries, err := c.k.UndoAction(r.Context(), id, sess.Who)
	switch {
	case errors.Is(err, undo.ErrNotFound):
		writeErr(w, http.StatusNotFound, "not_found", "nothing is kept to undo action "+id)
		return
	case errors.Is(err, undo.ErrAlreadyRestored):
		writeErr(w, http.StatusConflict, "already_undone", "action "+id+" was undone already")
		return
	case errors.Is(err, undo.ErrElsewhere):
		// Another instance of the fleet kept it (its machine's files).
		writeErr(w, http.StatusConflict, "kept_elsewhere", err.Error())
		return
	}
	resp := map[string]any{"action_id": id, "entries": entries, "ok": err == nil}
	if err != nil {
		resp["error"] = err.Error()
		writeJSON(w, http.StatusInternalServerError, resp)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// userRuleView is a stored user rule with its rule decoded.
type userRuleView struct {
	store.UserRule
	Decoded *policy.Rule `json:"decoded,omitempty"`
}

func (c *Console) apiPolicy(w http.ResponseWriter, r *http.Request, _ *session) {
	stored, err := c.k.Store.ListUserRules(r.Context(), c.clk.Now())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	users := make([]userRuleView, 0, len(stored))
	var adaptive []userRuleView
	for _, ur := range stored {
		v := userRuleView{UserRule: ur}
		var pr policy.Rule
		if json.Unmarshal(ur.Rule, &pr) == nil {
			v.Decoded = &pr
		}
		users = append(users, v)
		if ur.Origin == "adaptive" {
			adaptive = append(adaptive, v)
		}
	}
	hist, err := c.k.PolicyHistory(r.Context(), 0)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	// Newest first, at most 200.
	hv := make([]auditItem, 0, min(len(hist), 200))
	for i := len(hist) - 1; i >= 0 && len(hv) < 200; i-- {
		sum, lvl, src := describe(hist[i])
		hv = append(hv, auditItem{AuditRecord: hist[i], Summary: sum, Level: lvl, Source: src})
	}
	p := c.k.Engine.Policy()
	admin := make([]policy.Rule, 0, len(p.Rules))
	for _, cr := range p.Rules {
		admin = append(admin, cr.Rule)
	}
	if adaptive == nil {
		adaptive = []userRuleView{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"source":   c.k.PolicyFile,
		"locked":   p.Locked,
		"defaults": p.Defaults,
		"admin":    admin,
		"user":     users,
		"adaptive": adaptive,
		"history":  hv,
	})
}

func (c *Console) apiExplain(w http.ResponseWriter, r *http.Request, _ *session) {
	var a action.Action
	if err := decodeStrict(w, r, &a); err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", "the action is not valid JSON: "+err.Error())
		return
	}
	if strings.TrimSpace(a.Tool) == "" {
		writeErr(w, http.StatusBadRequest, "bad_request", `the action needs a "tool"`)
		return
	}
	writeJSON(w, http.StatusOK, c.k.Explain(r.Context(), &a))
}

func (c *Console) apiDeleteRule(w http.ResponseWriter, r *http.Request, sess *session) {
	err := c.k.RemoveUserRule(r.Context(), r.PathValue("id"), sess.Who)
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
