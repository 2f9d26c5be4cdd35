package web

import (
	"net/http"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
)

// The Unattended page: anomaly rules, the auto-rule builder with its dry
// run, templates, the rule log, the anomaly timeline and the rollback
// history. The handlers are the HTTP API's (httpapi.Controls), behind the
// console's session, as the person signed in; every change also needs the
// session's CSRF token.

func (c *Console) controls() *httpapi.Controls { return httpapi.NewControls(c.k) }

// mountControls registers the page's JSON API.
func (c *Console) mountControls(h func(pattern string, access httpapi.Access, fn http.HandlerFunc)) {
	acc := httpapi.AccessSession
	h("GET /ui/api/anomaly/rules", acc, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.controls().ListAnomalyRules(w, r) }))
	h("POST /ui/api/anomaly/rules", acc, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.controls().PutAnomalyRule(w, r, sessionWho(s), true)
	})))
	h("DELETE /ui/api/anomaly/rules/{id}", acc, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.controls().DeleteAnomalyRule(w, r, sessionWho(s))
	})))
	h("GET /ui/api/anomaly/events", acc, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.controls().AnomalyEvents(w, r) }))
	h("POST /ui/api/anomaly/rollback/{id}", acc, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.controls().Rollback(w, r, sessionWho(s), true)
	})))
	h("GET /ui/api/auto-rules", acc, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.controls().ListAutoRules(w, r) }))
	h("POST /ui/api/auto-rules", acc, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.controls().PutAutoRule(w, r, sessionWho(s), true)
	})))
	h("DELETE /ui/api/auto-rules/{id}", acc, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.controls().DeleteAutoRule(w, r, sessionWho(s))
	})))
	h("GET /ui/api/auto-rules/log", acc, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.controls().RuleLog(w, r) }))
	h("POST /ui/api/auto-rules/test", acc, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, _ *session) {
		c.controls().TestAutoRule(w, r)
	})))
	h("GET /ui/api/auto-rules/templates", acc, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.controls().Templates(w, r) }))
	h("POST /ui/api/auto-rules/templates/{name}", acc, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.controls().AddTemplate(w, r, sessionWho(s))
	})))
}
