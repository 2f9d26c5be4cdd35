package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// Agents serves the paused agents: the list, a person's pause and resume.
// The HTTP API and the web console share these handlers; each change is an
// audit record saying who made it.
type Agents struct {
	k       *kernel.Kernel
	maxBody int64
}

// NewAgents serves k's paused agents.
func NewAgents(k *kernel.Kernel) *Agents { return &Agents{k: k, maxBody: 1 << 20} }

// PauseRequest is the body of a pause or a resume (all fields optional).
type PauseRequest struct {
	Reason string `json:"reason,omitempty"`
	Who    string `json:"who,omitempty"`
}

// PausedList is the answer of GET /api/v1/agents/paused.
type PausedList struct {
	Paused []store.AgentPause `json:"paused"`
}

func (a *Agents) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength == 0 {
		return true
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, a.maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", "the request body is not valid: "+err.Error())
		return false
	}
	return true
}

// List answers the paused agents.
func (a *Agents) List(w http.ResponseWriter, r *http.Request) {
	list, err := a.k.PausedAgents(r.Context())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	if list == nil {
		list = []store.AgentPause{}
	}
	writeJSON(w, http.StatusOK, PausedList{Paused: list})
}

// Pause pauses the agent named in the path, as the body's who (default
// who).
func (a *Agents) Pause(w http.ResponseWriter, r *http.Request, who string) { a.pause(w, r, who, false) }

// PauseAs is Pause as who, whatever the body says (the console's signed-in
// person).
func (a *Agents) PauseAs(w http.ResponseWriter, r *http.Request, who string) {
	a.pause(w, r, who, true)
}

// Resume resumes the agent named in the path, as the body's who (default
// who).
func (a *Agents) Resume(w http.ResponseWriter, r *http.Request, who string) {
	a.resume(w, r, who, false)
}

// ResumeAs is Resume as who, whatever the body says.
func (a *Agents) ResumeAs(w http.ResponseWriter, r *http.Request, who string) {
	a.resume(w, r, who, true)
}

func (a *Agents) pause(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	var req PauseRequest
	if !a.decode(w, r, &req) {
		return
	}
	if req.Who != "" && !fixed {
		who = req.Who
	}
	agent := r.PathValue("agent")
	if err := a.k.PauseAgent(r.Context(), agent, req.Reason, who); err != nil {
		writeErr(w, http.StatusBadRequest, "pause", err.Error())
		return
	}
	p, _ := a.k.AgentPause(agent)
	writeJSON(w, http.StatusOK, p)
}

func (a *Agents) resume(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	var req PauseRequest
	if !a.decode(w, r, &req) {
		return
	}
	if req.Who != "" && !fixed {
		who = req.Who
	}
	agent := r.PathValue("agent")
	err := a.k.ResumeAgent(r.Context(), agent, who)
	switch {
	case errors.Is(err, kernel.ErrNotPaused):
		writeErr(w, http.StatusNotFound, "not_paused", err.Error())
		return
	case err != nil:
		writeErr(w, http.StatusBadRequest, "resume", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"agent": agent, "resumed": true})
}

// agentRoutes registers the paused-agent endpoints (token required).
func (s *Server) agentRoutes() {
	h := NewAgents(s.k)
	h.maxBody = s.opts.MaxBody
	s.r.HandleFunc("GET /api/v1/agents/paused", AccessToken, s.auth(h.List))
	s.r.HandleFunc("POST /api/v1/agents/{agent}/pause", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.Pause(w, r, "api") }))
	s.r.HandleFunc("POST /api/v1/agents/{agent}/resume", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.Resume(w, r, "api") }))
}
