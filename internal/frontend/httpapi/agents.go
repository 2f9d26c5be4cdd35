package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// Agents serves earned trust and the audited mode's rollbacks: the agents'
// records, a person's promotion and demotion, and the rollback of a file
// write found by ingest. The HTTP API and the web console share these
// handlers; every change is audited by the kernel.
type Agents struct {
	k       *kernel.Kernel
	maxBody int64
}

// NewAgents serves k's agents.
func NewAgents(k *kernel.Kernel) *Agents { return &Agents{k: k, maxBody: 1 << 20} }

// PromoteRequest is the body of a promotion.
type PromoteRequest struct {
	To               string   `json:"to"`
	Tools            []string `json:"tools,omitempty"`
	Reason           string   `json:"reason,omitempty"`
	AcceptViolations bool     `json:"accept_violations,omitempty"`
	Who              string   `json:"who,omitempty"`
}

// DemoteRequest is the body of a demotion.
type DemoteRequest struct {
	Reason string `json:"reason,omitempty"`
	Who    string `json:"who,omitempty"`
}

func (h *Agents) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength == 0 {
		return true
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, h.maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", "the request body is not valid: "+err.Error())
		return false
	}
	return true
}

// List answers every agent with its trust.
func (h *Agents) List(w http.ResponseWriter, r *http.Request) {
	names, err := h.k.Agents(r.Context())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	out := make([]*kernel.AgentTrust, 0, len(names))
	for _, n := range names {
		t, err := h.k.AgentTrustOf(r.Context(), n)
		if err != nil {
			writeErr(w, http.StatusInternalServerError, "store", err.Error())
			return
		}
		out = append(out, t)
	}
	writeJSON(w, http.StatusOK, out)
}

// Get answers an agent's record.
func (h *Agents) Get(w http.ResponseWriter, r *http.Request) {
	rec, err := h.k.AgentRecord(r.Context(), r.PathValue("agent"))
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// Promote promotes an agent as the body's "who" (unless fixed), else who.
func (h *Agents) Promote(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	var req PromoteRequest
	if !h.decode(w, r, &req) {
		return
	}
	if req.Who != "" && !fixed {
		who = req.Who
	}
	to, err := kernel.ParseTrustMode(req.To)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	c, err := h.k.PromoteAgent(r.Context(), kernel.Promotion{Agent: r.PathValue("agent"), To: to, Tools: req.Tools,
		Who: who, Reason: req.Reason, AcceptViolations: req.AcceptViolations})
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// Demote demotes an agent one step.
func (h *Agents) Demote(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	var req DemoteRequest
	if !h.decode(w, r, &req) {
		return
	}
	if req.Who != "" && !fixed {
		who = req.Who
	}
	c, err := h.k.DemoteAgent(r.Context(), r.PathValue("agent"), who, req.Reason)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// PlanRollback answers what rolling back ingested action {id} would do.
func (h *Agents) PlanRollback(w http.ResponseWriter, r *http.Request) {
	p, err := h.k.PlanRollback(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// Rollback rolls back ingested action {id}'s file write, as who.
func (h *Agents) Rollback(w http.ResponseWriter, r *http.Request, who, channel string) {
	p, err := h.k.Rollback(r.Context(), r.PathValue("id"), who, channel)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (h *Agents) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, kernel.ErrNoRollback):
		writeErr(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, kernel.ErrPromotion):
		writeErr(w, http.StatusConflict, "promotion_refused", err.Error())
	case errors.Is(err, kernel.ErrChangedSince):
		writeErr(w, http.StatusConflict, "changed_since", err.Error())
	case errors.Is(err, kernel.ErrRollbackRefused):
		writeErr(w, http.StatusForbidden, "rollback_refused", err.Error())
	default:
		writeErr(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

// agentRoutes registers the earned-trust and rollback endpoints (token
// required: only a person promotes, demotes or rolls back).
func (s *Server) agentRoutes() {
	h := NewAgents(s.k)
	s.r.HandleFunc("GET /api/v1/agents", AccessToken, s.auth(h.List))
	s.r.HandleFunc("GET /api/v1/agents/{agent}", AccessToken, s.auth(h.Get))
	s.r.HandleFunc("POST /api/v1/agents/{agent}/promote", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.Promote(w, r, "api", false) }))
	s.r.HandleFunc("POST /api/v1/agents/{agent}/demote", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.Demote(w, r, "api", false) }))
	s.r.HandleFunc("GET /api/v1/ingested/{id}/rollback", AccessToken, s.auth(h.PlanRollback))
	s.r.HandleFunc("POST /api/v1/ingested/{id}/rollback", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.Rollback(w, r, "api", "api") }))
}
