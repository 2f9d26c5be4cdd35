package web

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/frontend/mcpgw"
	"github.com/overseer-dev/overseer/internal/store"
)

// The Delegation page: grants (issued, listed and revoked by the person
// signed in — the handlers are the HTTP API's, behind the console's
// session and CSRF token), the current conflicts between sessions, and the
// MCP gateway's upstream health as its audit records last said.

func (c *Console) grants() *httpapi.Grants { return httpapi.NewGrants(c.k) }

func (c *Console) apiGrants(w http.ResponseWriter, r *http.Request, _ *session) {
	c.grants().List(w, r)
}

func (c *Console) apiIssueGrant(w http.ResponseWriter, r *http.Request, s *session) {
	c.grants().Issue(w, r, sessionWho(s), "web", true)
}

func (c *Console) apiRevokeGrant(w http.ResponseWriter, r *http.Request, s *session) {
	c.grants().Revoke(w, r, sessionWho(s), "web", true)
}

func (c *Console) apiConflicts(w http.ResponseWriter, r *http.Request, _ *session) {
	cs, err := c.k.Conflicts(r.Context())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"conflicts": cs})
}

// upstreamsScan bounds how many health records are read for the page.
const upstreamsScan = 2000

// apiUpstreams answers each MCP upstream server's health as last recorded
// (a gateway audits every change of its upstreams' health).
func (c *Console) apiUpstreams(w http.ResponseWriter, r *http.Request, _ *session) {
	recs, err := c.k.Store.QueryAudit(r.Context(), store.AuditQuery{Types: []string{mcpgw.TypeUpstream}, Desc: true, Limit: upstreamsScan})
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	type upstream struct {
		mcpgw.UpstreamHealth
		Recorded time.Time `json:"recorded"`
	}
	seen := map[string]bool{}
	out := []upstream{}
	for _, rec := range recs {
		if seen[rec.Tool] {
			continue
		}
		seen[rec.Tool] = true
		var h mcpgw.UpstreamHealth
		if json.Unmarshal(rec.Data, &h) != nil {
			continue
		}
		out = append(out, upstream{UpstreamHealth: h, Recorded: rec.Time})
	}
	writeJSON(w, http.StatusOK, map[string]any{"upstreams": out})
}
