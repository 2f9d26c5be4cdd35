package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/lazyre"
	"github.com/overseer-dev/overseer/internal/store"
)

// submitBody is the body of POST /api/v1/actions: the action, and who holds
// the call while a person decides.
type submitBody struct {
	action.Action
	Asker *AskerRequest `json:"asker,omitempty"`
	// KnownValues are fingerprints of the caller's own secret values (an
	// agent's hook reports its environment's; see kernel.EnvFingerprints):
	// the call is also scanned for them. Never the values themselves.
	KnownValues []kernel.KnownValue `json:"known_values,omitempty"`
}

// AskerRequest says who holds an agent's call while a person decides, so
// that a request nobody waits for any more is withdrawn instead of staying
// in the queue looking live. Every field is optional.
type AskerRequest struct {
	// Kind is hook, mcp or api (the default).
	Kind string `json:"kind,omitempty"`
	// PID, Start and Host name the waiting process (see package proc): when
	// Host is the daemon's and the process is gone, the request is withdrawn.
	PID   int    `json:"pid,omitempty"`
	Start string `json:"start,omitempty"`
	Host  string `json:"host,omitempty"`
	// Wait is how long from now the caller waits at most ("10m"): then the
	// request is withdrawn.
	Wait string `json:"wait,omitempty"`
	// Hold promises a long-poll (?wait=) open on the request while the
	// caller waits: a request nobody polls for is withdrawn after a grace.
	Hold bool `json:"hold,omitempty"`
	// Key is a secret of the caller's (16 characters or more) with which it
	// may withdraw its own request (POST /api/v1/actions/{id}/withdraw).
	Key string `json:"key,omitempty"`
}

// maxAskerWait bounds an asker's stated wait.
const maxAskerWait = 7 * 24 * time.Hour

var askerKind = lazyre.New(`^[a-z][a-z0-9-]{0,31}$`)

// askerOf checks a request's asker and turns it into what the approval
// keeps: the wait becomes a time on the daemon's clock, the key its hash.
func askerOf(req *AskerRequest, now time.Time) (*store.Asker, error) {
	if req == nil {
		return nil, nil
	}
	a := &store.Asker{Kind: req.Kind, PID: req.PID, Start: req.Start, Host: req.Host, Hold: req.Hold}
	if a.Kind == "" {
		a.Kind = "api"
	}
	switch {
	case !askerKind.MatchString(a.Kind):
		return nil, fmt.Errorf("asker.kind %q: want a short lower-case word (hook, mcp, api)", req.Kind)
	case req.PID < 0:
		return nil, errors.New("asker.pid: negative")
	case len(req.Start) > 64 || len(req.Host) > 256:
		return nil, errors.New("asker.start or asker.host: too long")
	case req.Key != "" && (len(req.Key) < 16 || len(req.Key) > 256):
		return nil, errors.New("asker.key: want 16 to 256 characters")
	}
	if req.Wait != "" {
		d, err := time.ParseDuration(req.Wait)
		if err != nil || d <= 0 || d > maxAskerWait {
			return nil, fmt.Errorf("asker.wait %q: want a positive duration up to %s (e.g. 10m)", req.Wait, maxAskerWait)
		}
		a.Until = now.Add(d)
	}
	if req.Key != "" {
		a.KeyHash = gate.AskerKeyHash(req.Key)
	}
	return a, nil
}

// WithdrawRequest is the body of POST /api/v1/actions/{id}/withdraw.
type WithdrawRequest struct {
	Key    string `json:"key"`
	Reason string `json:"reason,omitempty"`
}

// withdraw lets the caller that asked for a person give up: the action's
// pending approval is withdrawn (not refused; it teaches nothing). Only the
// holder of the key given with the action may.
func (s *Server) withdraw(w http.ResponseWriter, r *http.Request) {
	var req WithdrawRequest
	if !s.decode(w, r, &req) {
		return
	}
	id := r.PathValue("id")
	recs, err := s.k.Store.QueryAudit(r.Context(), store.AuditQuery{ActionID: id, Types: []string{audit.TypeApprovalRequest}, Limit: 1})
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	var apr store.Approval
	if len(recs) == 0 || json.Unmarshal(recs[0].Data, &apr) != nil || apr.ID == "" {
		writeErr(w, http.StatusNotFound, "not_found", "no approval for action "+id)
		return
	}
	reason := strings.TrimSpace(req.Reason)
	if reason == "" {
		reason = "the caller stopped waiting"
	}
	if len(reason) > 500 {
		reason = reason[:500]
	}
	got, applied, err := s.k.Gate.WithdrawAsked(r.Context(), apr.ID, req.Key, reason)
	switch {
	case errors.Is(err, gate.ErrNotAsker):
		writeErr(w, http.StatusForbidden, "not_asker", "only the caller that asked may withdraw it (with the key it sent as asker.key)")
		return
	case errors.Is(err, store.ErrNotFound):
		writeErr(w, http.StatusNotFound, "not_found", "no approval for action "+id)
		return
	case err != nil && got == nil:
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	o := OutcomeOf(id, nil, got)
	writeJSON(w, http.StatusOK, map[string]any{"outcome": o, "applied": applied})
}
