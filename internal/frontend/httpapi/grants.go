package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// Grants serves delegated mode's grants: list, issue, revoke. Every
// route needs a person's credential (the daemon's token, or the console's
// session): an agent cannot issue, widen or extend a grant for itself.
// The HTTP API and the web console share these handlers.
type Grants struct {
	k       *kernel.Kernel
	maxBody int64
}

// NewGrants serves k's grants.
func NewGrants(k *kernel.Kernel) *Grants { return &Grants{k: k, maxBody: 1 << 20} }

// GrantRequest is the body of an issue: the spec, and either Expires in
// the spec or TTL from now.
type GrantRequest struct {
	kernel.GrantSpec
	// TTL is the grant's life from now ("2h"), when the spec has no expiry.
	TTL     grant.Duration `json:"ttl,omitempty"`
	Who     string         `json:"who,omitempty"`
	Channel string         `json:"channel,omitempty"`
}

// RevokeRequest is the body of a revocation.
type RevokeRequest struct {
	Who     string `json:"who,omitempty"`
	Channel string `json:"channel,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func (g *Grants) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength == 0 {
		return true
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, g.maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", "the request body is not valid: "+err.Error())
		return false
	}
	return true
}

// List answers the grants, newest first (?active=1: only those usable now).
func (g *Grants) List(w http.ResponseWriter, r *http.Request) {
	list, err := g.k.ListGrants(r.Context(), r.URL.Query().Get("active") == "1")
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// Get answers one grant.
func (g *Grants) Get(w http.ResponseWriter, r *http.Request) {
	v, err := g.k.GetGrant(r.Context(), r.PathValue("id"))
	if err != nil {
		g.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// Issue issues a grant as the body's "who" (else who); with fixed, as who
// whatever the body says (the console's signed-in person).
func (g *Grants) Issue(w http.ResponseWriter, r *http.Request, who, channel string, fixed bool) {
	var req GrantRequest
	if !g.decode(w, r, &req) {
		return
	}
	if req.Who != "" && !fixed {
		who = req.Who
	}
	if req.Channel != "" && !fixed {
		channel = req.Channel
	}
	if req.Expires.IsZero() && req.TTL > 0 {
		req.Expires = g.k.Clock.Now().Add(time.Duration(req.TTL))
	}
	gr, err := g.k.IssueGrant(r.Context(), req.GrantSpec, who, channel)
	if err != nil {
		g.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, gr)
}

// Revoke revokes a grant (and the grants carved out of it) at once.
func (g *Grants) Revoke(w http.ResponseWriter, r *http.Request, who, channel string, fixed bool) {
	var req RevokeRequest
	if !g.decode(w, r, &req) {
		return
	}
	if req.Who != "" && !fixed {
		who = req.Who
	}
	if req.Channel != "" && !fixed {
		channel = req.Channel
	}
	gr, err := g.k.RevokeGrant(r.Context(), r.PathValue("id"), who, channel, req.Reason)
	if err != nil {
		g.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, gr)
}

func (g *Grants) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, grant.ErrNotFound):
		writeErr(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, grant.ErrInvalid), errors.Is(err, grant.ErrExceeds), errors.Is(err, grant.ErrInactive):
		writeErr(w, http.StatusUnprocessableEntity, "invalid_grant", err.Error())
	default:
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
	}
}

// grantRoutes registers the grant endpoints (token required).
func (s *Server) grantRoutes() {
	h := NewGrants(s.k)
	if s.opts.MaxBody > 0 {
		h.maxBody = s.opts.MaxBody
	}
	s.r.HandleFunc("GET /api/v1/grants", AccessToken, s.auth(h.List))
	s.r.HandleFunc("GET /api/v1/grants/{id}", AccessToken, s.auth(h.Get))
	s.r.HandleFunc("POST /api/v1/grants", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.Issue(w, r, "api", "api", false) }))
	s.r.HandleFunc("POST /api/v1/grants/{id}/revoke", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.Revoke(w, r, "api", "api", false) }))
}
