package web

import (
	"errors"
	"net/http"

	"github.com/overseer-dev/overseer/internal/mcppin"
)

// apiPins lists the MCP gateway's pinned tool definitions, with the
// pending changes (diff and findings) a person may accept.
func (c *Console) apiPins(w http.ResponseWriter, r *http.Request, _ *session) {
	pins, err := c.k.Pins.List(r.Context())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"pins": pins})
}

// apiAcceptPin accepts a tool's pending definition, bound to the hash the
// person was shown.
func (c *Console) apiAcceptPin(w http.ResponseWriter, r *http.Request, s *session) {
	var req struct {
		Hash string `json:"hash"`
		Kind string `json:"kind"`
	}
	if err := decodeStrict(w, r, &req); err != nil || req.Hash == "" {
		writeErr(w, http.StatusBadRequest, "bad_request", "a JSON body with the pending definition's hash is required")
		return
	}
	kind, err := mcppin.ParseKind(req.Kind)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	who := "web"
	if s != nil && s.Who != "" {
		who = s.Who
	}
	pin, err := c.k.AcceptMCP(r.Context(), r.PathValue("server"), kind, r.PathValue("tool"), req.Hash, who, "web")
	switch {
	case errors.Is(err, mcppin.ErrNothingToAccept):
		writeErr(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, mcppin.ErrStale):
		writeErr(w, http.StatusConflict, "stale", err.Error())
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
	default:
		writeJSON(w, http.StatusOK, pin)
	}
}
