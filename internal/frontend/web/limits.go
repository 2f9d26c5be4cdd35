package web

import (
	"net/http"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
)

// The Limits page: rate limits and budget caps (settings, gauges of the
// current use, the cost per day, week and month), and the paused agents
// with their Resume buttons. The handlers are the HTTP API's
// (httpapi.Usage, httpapi.Pauses), behind the console's session; every
// change also needs the session's CSRF token and is recorded as made by
// the person signed in.

func (c *Console) usage() *httpapi.Usage   { return httpapi.NewUsage(c.k) }
func (c *Console) pauses() *httpapi.Pauses { return httpapi.NewPauses(c.k) }

// limitRoutes registers the page's JSON API.
func (c *Console) limitRoutes(h func(pattern string, access httpapi.Access, fn http.HandlerFunc)) {
	const sess = httpapi.AccessSession
	h("GET /ui/api/rate-limits", sess, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.usage().RateLimits(w, r) }))
	h("GET /ui/api/rate-limits/usage", sess, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.usage().RateUsage(w, r) }))
	h("POST /ui/api/rate-limits", sess, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.usage().PutRateLimit(w, r, sessionWho(s), true)
	})))
	h("PUT /ui/api/rate-limits/{id}", sess, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.usage().PutRateLimit(w, r, sessionWho(s), true)
	})))
	h("DELETE /ui/api/rate-limits/{id}", sess, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.usage().DeleteRateLimit(w, r, sessionWho(s))
	})))
	h("GET /ui/api/budget", sess, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.usage().Budget(w, r) }))
	h("GET /ui/api/budget/caps", sess, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.usage().BudgetCaps(w, r) }))
	h("GET /ui/api/budget/usage", sess, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.usage().SpendTimeline(w, r) }))
	h("POST /ui/api/budget/caps", sess, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.usage().PutBudgetCap(w, r, sessionWho(s), true)
	})))
	h("PUT /ui/api/budget/caps/{id}", sess, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.usage().PutBudgetCap(w, r, sessionWho(s), true)
	})))
	h("DELETE /ui/api/budget/caps/{id}", sess, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.usage().DeleteBudgetCap(w, r, sessionWho(s))
	})))
	h("GET /ui/api/agents/paused", sess, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.pauses().List(w, r) }))
	h("POST /ui/api/agents/{agent}/pause", sess, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.pauses().PauseAs(w, r, sessionWho(s))
	})))
	h("POST /ui/api/agents/{agent}/resume", sess, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.pauses().ResumeAs(w, r, sessionWho(s))
	})))
}
