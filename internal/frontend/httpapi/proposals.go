package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// Proposals serves learned trust: the rules Overseer proposes after a
// person approved the same kind of call several times, their dry runs, and
// a person's accept or dismiss; and the dry run of any rule over the audit
// trail. The HTTP API and the web console share these handlers.
type Proposals struct {
	k       *kernel.Kernel
	maxBody int64
}

// NewProposals serves k's proposals.
func NewProposals(k *kernel.Kernel) *Proposals { return &Proposals{k: k, maxBody: 4 << 20} }

// ProposalAnswer is the body of an accept or a dismiss.
type ProposalAnswer struct {
	Who string `json:"who,omitempty"`
	// Version is the proposal's version the person looked at; when set and
	// the proposal changed since, the accept is refused (409).
	Version string `json:"version,omitempty"`
	// Rule is the person's edited version of the proposed rule (accept
	// only): checked against its examples and the person's refusals, and
	// dry-run again.
	Rule *policy.Rule `json:"rule,omitempty"`
}

// ReplayRequest is the body of a dry run.
type ReplayRequest struct {
	Rule policy.Rule `json:"rule"`
}

func (p *Proposals) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength == 0 {
		return true
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, p.maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", "the request body is not valid: "+err.Error())
		return false
	}
	return true
}

// List answers the open proposals, each with its dry run.
func (p *Proposals) List(w http.ResponseWriter, r *http.Request) {
	list, err := p.k.Proposals(r.Context())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// Get answers one open proposal.
func (p *Proposals) Get(w http.ResponseWriter, r *http.Request) {
	pr, err := p.k.Proposal(r.Context(), r.PathValue("id"))
	if err != nil {
		p.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, pr)
}

// Accept saves a proposal's rule (or the person's edit of it) in the user
// layer, as the body's "who", else as who.
func (p *Proposals) Accept(w http.ResponseWriter, r *http.Request, who string) {
	p.accept(w, r, who, false)
}

// AcceptAs is Accept as who, whatever the body says (the console's
// signed-in person).
func (p *Proposals) AcceptAs(w http.ResponseWriter, r *http.Request, who string) {
	p.accept(w, r, who, true)
}

func (p *Proposals) accept(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	var req ProposalAnswer
	if !p.decode(w, r, &req) {
		return
	}
	if req.Who != "" && !fixed {
		who = req.Who
	}
	ur, pr, err := p.k.AcceptProposal(r.Context(), r.PathValue("id"), req.Version, req.Rule, who)
	if err != nil {
		p.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"rule": ur, "proposal": pr})
}

// Dismiss records that a person does not want a proposal, as the body's
// "who", else as who.
func (p *Proposals) Dismiss(w http.ResponseWriter, r *http.Request, who string) {
	p.dismiss(w, r, who, false)
}

// DismissAs is Dismiss as who, whatever the body says.
func (p *Proposals) DismissAs(w http.ResponseWriter, r *http.Request, who string) {
	p.dismiss(w, r, who, true)
}

func (p *Proposals) dismiss(w http.ResponseWriter, r *http.Request, who string, fixed bool) {
	var req ProposalAnswer
	if !p.decode(w, r, &req) {
		return
	}
	if req.Who != "" && !fixed {
		who = req.Who
	}
	pr, err := p.k.DismissProposal(r.Context(), r.PathValue("id"), who)
	if err != nil {
		p.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"proposal": pr, "dismissed": true})
}

// Replay answers the dry run of a rule over the audit trail.
func (p *Proposals) Replay(w http.ResponseWriter, r *http.Request) {
	var req ReplayRequest
	if !p.decode(w, r, &req) {
		return
	}
	rep, err := p.k.ReplayRule(r.Context(), req.Rule)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "invalid_rule", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (p *Proposals) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeErr(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, kernel.ErrProposalChanged):
		writeErr(w, http.StatusConflict, "changed", err.Error())
	case errors.Is(err, kernel.ErrUnsafeRule), errors.Is(err, policy.ErrInvalid):
		writeErr(w, http.StatusUnprocessableEntity, "invalid_rule", err.Error())
	default:
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
	}
}

// proposalRoutes registers the learned-trust endpoints (token required).
func (s *Server) proposalRoutes() {
	h := NewProposals(s.k)
	h.maxBody = s.opts.MaxBody
	s.r.HandleFunc("GET /api/v1/proposals", AccessToken, s.auth(h.List))
	s.r.HandleFunc("GET /api/v1/proposals/{id}", AccessToken, s.auth(h.Get))
	s.r.HandleFunc("POST /api/v1/proposals/{id}/accept", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.Accept(w, r, "api") }))
	s.r.HandleFunc("POST /api/v1/proposals/{id}/dismiss", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) { h.Dismiss(w, r, "api") }))
	s.r.HandleFunc("POST /api/v1/policy/replay", AccessToken, s.auth(h.Replay))
}
