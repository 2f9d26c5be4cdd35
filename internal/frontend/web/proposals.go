package web

import (
	"net/http"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
)

// Learned trust on the Policy page: the rules Overseer proposes from a
// person's approvals, with their dry runs, accepted (as proposed or
// edited) or dismissed by the person signed in. The handlers are the HTTP
// API's (httpapi.Proposals), behind the console's session; every change
// also needs the session's CSRF token.

func (c *Console) trust() *httpapi.Proposals { return httpapi.NewProposals(c.k) }

func (c *Console) apiProposals(w http.ResponseWriter, r *http.Request, _ *session) {
	c.trust().List(w, r)
}

func (c *Console) apiProposalAccept(w http.ResponseWriter, r *http.Request, s *session) {
	c.trust().AcceptAs(w, r, sessionWho(s))
}

func (c *Console) apiProposalDismiss(w http.ResponseWriter, r *http.Request, s *session) {
	c.trust().DismissAs(w, r, sessionWho(s))
}

func (c *Console) apiReplay(w http.ResponseWriter, r *http.Request, _ *session) {
	c.trust().Replay(w, r)
}

// sessionWho names the person signed in to the console.
func sessionWho(s *session) string {
	if s != nil && s.Who != "" {
		return s.Who
	}
	return "web"
}
