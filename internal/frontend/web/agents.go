package web

import (
	"net/http"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
)

// Earned trust on the Agents page: each agent's record (live and ingested
// actions, verdicts, refusals, violations, trust history, the grant a
// promotion would propose), promoted or demoted by the person signed in;
// and the rollback of file writes found by `overseer audit ingest`. The
// handlers are the HTTP API's (httpapi.Agents), behind the console's
// session; every change also needs the session's CSRF token.

func (c *Console) agents() *httpapi.Agents { return httpapi.NewAgents(c.k) }

// agentRoutes registers the Agents page's API on the console's mux.
func (c *Console) agentRoutes(h func(string, httpapi.Access, http.HandlerFunc)) {
	const access = httpapi.AccessSession
	h("GET /ui/api/agents", access, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.agents().List(w, r) }))
	h("GET /ui/api/agents/{agent}", access, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.agents().Get(w, r) }))
	h("POST /ui/api/agents/{agent}/promote", access, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.agents().Promote(w, r, sessionWho(s), true)
	})))
	h("POST /ui/api/agents/{agent}/demote", access, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.agents().Demote(w, r, sessionWho(s), true)
	})))
	h("GET /ui/api/ingested/{id}/rollback", access, c.session(func(w http.ResponseWriter, r *http.Request, _ *session) { c.agents().PlanRollback(w, r) }))
	h("POST /ui/api/ingested/{id}/rollback", access, c.session(c.csrf(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.agents().Rollback(w, r, sessionWho(s), "web")
	})))
}
