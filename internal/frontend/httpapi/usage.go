package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/usage"
)

// Usage serves the rate limits and budget caps: their definitions (a
// person's changes, each an audit record), the use against them, the spend
// over time, and the agents' reports of their model use. The HTTP API and
// the web console share these handlers.
type Usage struct {
	k       *kernel.Kernel
	maxBody int64
}

// NewUsage serves k's rate limits and budgets.
func NewUsage(k *kernel.Kernel) *Usage { return &Usage{k: k, maxBody: 1 << 20} }

func (u *Usage) body(w http.ResponseWriter, r *http.Request) ([]byte, string, bool) {
	b, err := readAll(w, r, u.maxBody)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return nil, "", false
	}
	// "who" rides beside the definition's fields; it is taken out before
	// the definition is decoded strictly.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", "the request body is not a JSON object: "+err.Error())
		return nil, "", false
	}
	var who string
	if raw, ok := m["who"]; ok {
		if err := json.Unmarshal(raw, &who); err != nil {
			writeErr(w, http.StatusBadRequest, "bad_request", "who is not a string")
			return nil, "", false
		}
		delete(m, "who")
	}
	b, _ = json.Marshal(m)
	return b, who, true
}

func readAll(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	var b []byte
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, max))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, errors.New("the request body is not valid JSON: " + err.Error())
	}
	b = raw
	return b, nil
}

// RateLimits answers the rate limits.
func (u *Usage) RateLimits(w http.ResponseWriter, r *http.Request) {
	list := u.k.RateLimits()
	if list == nil {
		list = []usage.RateLimit{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"rate_limits": list})
}

// PutRateLimit adds (POST) or replaces (PUT …/{id}) a rate limit as who
// (the body's who, unless fixed).
func (u *Usage) PutRateLimit(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	b, bodyWho, ok := u.body(w, r)
	if !ok {
		return
	}
	if bodyWho != "" && !fixed {
		who = bodyWho
	}
	l, err := usage.DecodeRateLimit(b)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	status := http.StatusCreated
	if id := r.PathValue("id"); id != "" {
		if l.ID != "" && l.ID != id {
			writeErr(w, http.StatusBadRequest, "invalid", "the body's id is not the path's")
			return
		}
		if !hasLimit(u.k.RateLimits(), id) {
			writeErr(w, http.StatusNotFound, "not_found", "no rate limit "+id)
			return
		}
		l.ID, status = id, http.StatusOK
	} else if l.ID != "" && hasLimit(u.k.RateLimits(), l.ID) {
		writeErr(w, http.StatusConflict, "exists", "rate limit "+l.ID+" exists; change it with PUT")
		return
	}
	l, err = u.k.PutRateLimit(r.Context(), l, who)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	writeJSON(w, status, l)
}

func hasLimit(list []usage.RateLimit, id string) bool {
	for _, l := range list {
		if l.ID == id {
			return true
		}
	}
	return false
}

func hasCap(list []usage.BudgetCap, id string) bool {
	for _, c := range list {
		if c.ID == id {
			return true
		}
	}
	return false
}

// DeleteRateLimit removes the rate limit named in the path.
func (u *Usage) DeleteRateLimit(w http.ResponseWriter, r *http.Request, who string) {
	u.remove(w, r, who, u.k.DeleteRateLimit)
}

// DeleteBudgetCap removes the budget cap named in the path.
func (u *Usage) DeleteBudgetCap(w http.ResponseWriter, r *http.Request, who string) {
	u.remove(w, r, who, u.k.DeleteBudgetCap)
}

func (u *Usage) remove(w http.ResponseWriter, r *http.Request, who string, del func(ctx context.Context, id, who string) error) {
	if q := strings.TrimSpace(r.URL.Query().Get("who")); q != "" && who == "api" {
		who = q
	}
	err := del(r.Context(), r.PathValue("id"), who)
	switch {
	case errors.Is(err, kernel.ErrNoControl):
		writeErr(w, http.StatusNotFound, "not_found", err.Error())
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// LimitUse is the use of one rate limit by one agent.
type LimitUse = usage.LimitUse

// RateUsage answers each rate limit's current count per agent.
func (u *Usage) RateUsage(w http.ResponseWriter, r *http.Request) {
	list := u.k.LimitUses()
	if list == nil {
		list = []usage.LimitUse{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"usage": list})
}

// BudgetStatus is the answer of GET /api/v1/budget.
type BudgetStatus struct {
	Caps []usage.Status `json:"caps"`
	// Alerts are the caps at 80% or more.
	Alerts []usage.Status `json:"alerts"`
	// Today, Week and Month are the spend of every agent in the current
	// day, week and month.
	Today float64 `json:"today_usd"`
	Week  float64 `json:"week_usd"`
	Month float64 `json:"month_usd"`
}

// Budget answers the caps' status and the spend of the current periods.
func (u *Usage) Budget(w http.ResponseWriter, r *http.Request) {
	now := u.k.Clock.Now()
	st := BudgetStatus{Caps: u.k.Budgets(), Alerts: []usage.Status{}}
	if st.Caps == nil {
		st.Caps = []usage.Status{}
	}
	for _, s := range st.Caps {
		if s.Share >= usage.AlertAt && s.Cap.Enabled {
			st.Alerts = append(st.Alerts, s)
		}
	}
	day := usage.DayKey(now)
	week := usage.DayKey(usage.PeriodStart(usage.Weekly, now))
	month := usage.DayKey(usage.PeriodStart(usage.Monthly, now))
	for k, sp := range u.k.SpendRows() {
		d, _, _, ok := usage.SplitSpendKey(k)
		if !ok || d > day {
			continue
		}
		if d == day {
			st.Today += sp.Cost
		}
		if d >= week {
			st.Week += sp.Cost
		}
		if d >= month {
			st.Month += sp.Cost
		}
	}
	writeJSON(w, http.StatusOK, st)
}

// BudgetCaps answers the caps.
func (u *Usage) BudgetCaps(w http.ResponseWriter, r *http.Request) {
	list := u.k.BudgetCaps()
	if list == nil {
		list = []usage.BudgetCap{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"caps": list})
}

// PutBudgetCap adds (POST) or replaces (PUT …/{id}) a budget cap.
func (u *Usage) PutBudgetCap(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	b, bodyWho, ok := u.body(w, r)
	if !ok {
		return
	}
	if bodyWho != "" && !fixed {
		who = bodyWho
	}
	c, err := usage.DecodeBudgetCap(b)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	status := http.StatusCreated
	if id := r.PathValue("id"); id != "" {
		if c.ID != "" && c.ID != id {
			writeErr(w, http.StatusBadRequest, "invalid", "the body's id is not the path's")
			return
		}
		if !hasCap(u.k.BudgetCaps(), id) {
			writeErr(w, http.StatusNotFound, "not_found", "no budget cap "+id)
			return
		}
		c.ID, status = id, http.StatusOK
	} else if c.ID != "" && hasCap(u.k.BudgetCaps(), c.ID) {
		writeErr(w, http.StatusConflict, "exists", "budget cap "+c.ID+" exists; change it with PUT")
		return
	}
	c, err = u.k.PutBudgetCap(r.Context(), c, who)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	writeJSON(w, status, c)
}

// Prices answers the price table.
func (u *Usage) Prices(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"prices": u.k.Prices()})
}

// PutPrices replaces the price table: {"prices": {"model*": {...}}}.
func (u *Usage) PutPrices(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	b, bodyWho, ok := u.body(w, r)
	if !ok {
		return
	}
	if bodyWho != "" && !fixed {
		who = bodyWho
	}
	var req struct {
		Prices usage.Prices `json:"prices"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Prices == nil {
		writeErr(w, http.StatusBadRequest, "invalid", "want {\"prices\": {\"model\": {\"input_per_mtok\": …, \"output_per_mtok\": …}}}")
		return
	}
	if err := u.k.SetPrices(r.Context(), req.Prices, who); err != nil {
		writeErr(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"prices": u.k.Prices()})
}

// DayUse is one day's spend.
type DayUse struct {
	Day     string             `json:"day"`
	Cost    float64            `json:"cost_usd"`
	Input   int64              `json:"input_tokens"`
	Output  int64              `json:"output_tokens"`
	Calls   int64              `json:"calls"`
	ByAgent map[string]float64 `json:"by_agent,omitempty"`
}

// Timeline is the answer of GET /api/v1/budget/usage.
type Timeline struct {
	Days   []DayUse `json:"days"`
	Weeks  []DayUse `json:"weeks"`
	Months []DayUse `json:"months"`
}

// SpendTimeline answers the spend per day, week and month (of one agent
// when the path names it): ?days=N (default 31, at most 400).
func (u *Usage) SpendTimeline(w http.ResponseWriter, r *http.Request) {
	days := 31
	if q := r.URL.Query().Get("days"); q != "" {
		var n int
		if err := json.Unmarshal([]byte(q), &n); err != nil || n < 1 || n > 400 {
			writeErr(w, http.StatusBadRequest, "bad_request", "days must be a number from 1 to 400")
			return
		}
		days = n
	}
	writeJSON(w, http.StatusOK, BuildTimeline(u.k.SpendRows(), r.PathValue("agent"), days, u.k.Clock.Now()))
}

// BuildTimeline sums spend rows per day (the last days up to now), week
// and month, of agent ("" for all).
func BuildTimeline(rows map[string]usage.Spend, agent string, days int, now time.Time) Timeline {
	byDay := map[string]*DayUse{}
	for k, sp := range rows {
		d, a, _, ok := usage.SplitSpendKey(k)
		if !ok || agent != "" && a != agent {
			continue
		}
		du := byDay[d]
		if du == nil {
			du = &DayUse{Day: d, ByAgent: map[string]float64{}}
			byDay[d] = du
		}
		du.Cost += sp.Cost
		du.Input += sp.Input
		du.Output += sp.Output
		du.Calls += sp.Calls
		du.ByAgent[a] += sp.Cost
	}
	t := Timeline{Days: []DayUse{}, Weeks: []DayUse{}, Months: []DayUse{}}
	weeks, months := map[string]*DayUse{}, map[string]*DayUse{}
	for i := days - 1; i >= 0; i-- {
		d := now.AddDate(0, 0, -i)
		key := usage.DayKey(d)
		du := DayUse{Day: key}
		if x := byDay[key]; x != nil {
			du = *x
		}
		t.Days = append(t.Days, du)
	}
	for key, du := range byDay {
		day, err := time.ParseInLocation("2006-01-02", key, now.Location())
		if err != nil || key > usage.DayKey(now) {
			continue
		}
		for _, g := range []struct {
			m      map[string]*DayUse
			period string
		}{{weeks, usage.Weekly}, {months, usage.Monthly}} {
			gk := usage.DayKey(usage.PeriodStart(g.period, day))
			x := g.m[gk]
			if x == nil {
				x = &DayUse{Day: gk}
				g.m[gk] = x
			}
			x.Cost += du.Cost
			x.Input += du.Input
			x.Output += du.Output
			x.Calls += du.Calls
		}
	}
	for _, g := range []struct {
		m   map[string]*DayUse
		out *[]DayUse
	}{{weeks, &t.Weeks}, {months, &t.Months}} {
		for _, x := range g.m {
			*g.out = append(*g.out, *x)
		}
		sort.Slice(*g.out, func(i, j int) bool { return (*g.out)[i].Day < (*g.out)[j].Day })
	}
	return t
}

// UsageReport is what an agent's hook reports of its model use.
type UsageReport struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	Model   string `json:"model,omitempty"`
	Input   int64  `json:"input_tokens"`
	Output  int64  `json:"output_tokens"`
	// Cumulative: the counts are the session's totals so far (only what is
	// new since the last report counts); otherwise one call's use.
	Cumulative bool `json:"cumulative"`
}

// RecordReport counts an agent's report of its model use: it can only add
// spend, never take it away. It returns the cost counted.
func (u *Usage) RecordReport(ctx context.Context, rep UsageReport) (float64, error) {
	if rep.Agent == "" || rep.Input < 0 || rep.Output < 0 || rep.Input > 1e12 || rep.Output > 1e12 {
		return 0, errors.New("a report names the agent and non-negative token counts")
	}
	use := kernel.Use{Agent: rep.Agent, Session: rep.Session, Model: rep.Model, Input: rep.Input, Output: rep.Output}
	if rep.Cumulative {
		return u.k.RecordReported(ctx, use), nil
	}
	return u.k.RecordUse(ctx, use), nil
}

// report is POST /api/v1/usage (agent side: no credential, under the
// quotas).
func (s *Server) report(h *Usage) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var rep UsageReport
		release := s.decodeSubmission(w, r, &rep, func() (string, string) { return rep.Agent, rep.Session })
		if release == nil {
			return
		}
		defer release()
		cost, err := h.RecordReport(r.Context(), rep)
		if err != nil {
			writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"counted_usd": cost})
	}
}

// usageRoutes registers the rate-limit and budget endpoints.
func (s *Server) usageRoutes() {
	h := NewUsage(s.k)
	h.maxBody = s.opts.MaxBody
	m := s.r
	m.HandleFunc("GET /api/v1/rate-limits", AccessToken, s.auth(h.RateLimits))
	m.HandleFunc("POST /api/v1/rate-limits", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.PutRateLimit(w, r, "api", false) }))
	m.HandleFunc("PUT /api/v1/rate-limits/{id}", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.PutRateLimit(w, r, "api", false) }))
	m.HandleFunc("DELETE /api/v1/rate-limits/{id}", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.DeleteRateLimit(w, r, "api") }))
	m.HandleFunc("GET /api/v1/rate-limits/usage", AccessToken, s.auth(h.RateUsage))
	m.HandleFunc("GET /api/v1/budget", AccessToken, s.auth(h.Budget))
	m.HandleFunc("GET /api/v1/budget/caps", AccessToken, s.auth(h.BudgetCaps))
	m.HandleFunc("POST /api/v1/budget/caps", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.PutBudgetCap(w, r, "api", false) }))
	m.HandleFunc("PUT /api/v1/budget/caps/{id}", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.PutBudgetCap(w, r, "api", false) }))
	m.HandleFunc("DELETE /api/v1/budget/caps/{id}", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.DeleteBudgetCap(w, r, "api") }))
	m.HandleFunc("GET /api/v1/budget/prices", AccessToken, s.auth(h.Prices))
	m.HandleFunc("PUT /api/v1/budget/prices", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.PutPrices(w, r, "api", false) }))
	m.HandleFunc("GET /api/v1/budget/usage", AccessToken, s.auth(h.SpendTimeline))
	m.HandleFunc("GET /api/v1/budget/usage/{agent}", AccessToken, s.auth(h.SpendTimeline))
	// Agent side: the hooks report what their agent's model used.
	m.HandleFunc("POST /api/v1/usage", AccessAgent, s.report(h))
}
