package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"

	"github.com/overseer-dev/overseer/internal/mcppin"
)

// pinView is a pin as the MCP page shows it: with the pending definition's
// changes against the accepted one, field by field, so that a person reads
// "the description said this, now it says that" rather than a JSON diff.
type pinView struct {
	mcppin.Pin
	// Changes are the fields of the pending definition that differ from
	// the accepted one (all of its fields when none was accepted).
	Changes []fieldChange `json:"changes,omitempty"`
	// Why says in one line why the pending definition is withheld, or why
	// the accepted one is flagged.
	Why string `json:"why,omitempty"`
}

// fieldChange is one field of a definition, before and after. Text fields
// (a description, a title, a URI) are given as they are; the others
// (schemas, annotations, arguments) as indented JSON, with a line diff.
type fieldChange struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
	Text  bool   `json:"text"`           // a text field, shown with a word diff
	Diff  string `json:"diff,omitempty"` // a line diff of Old and New (JSON fields)
}

// fieldOrder is the order fields are shown in; others follow by name.
var fieldOrder = map[string]int{"name": 0, "title": 1, "description": 2, "uri": 3, "uriTemplate": 4, "mimeType": 5,
	"arguments": 6, "inputSchema": 7, "outputSchema": 8, "annotations": 9}

// changes compares two canonical definitions field by field. old may be
// empty (nothing accepted yet).
func changes(old, cur json.RawMessage) []fieldChange {
	var a, b map[string]any
	if len(old) > 0 {
		_ = json.Unmarshal(old, &a)
	}
	if err := json.Unmarshal(cur, &b); err != nil {
		return nil
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		oi, iok := fieldOrder[names[i]]
		oj, jok := fieldOrder[names[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		}
		return names[i] < names[j]
	})
	var out []fieldChange
	for _, k := range names {
		ov, oText := render(a[k])
		nv, nText := render(b[k])
		if ov == nv {
			continue
		}
		c := fieldChange{Field: k, Old: ov, New: nv, Text: (oText || a[k] == nil) && (nText || b[k] == nil)}
		if !c.Text {
			c.Diff = mcppin.Diff(ov, nv)
		}
		out = append(out, c)
	}
	return out
}

// render is a field's value as shown: a string as it is (text true), other
// values as indented JSON; a missing value is "".
func render(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", false
	}
	return string(b), false
}

// apiPins lists the MCP gateway's pinned definitions (tools, prompts,
// resources), with the pending changes (field by field) a person may
// accept, and the pins' version (the live stream's "pins" event carries
// it when it changes).
func (c *Console) apiPins(w http.ResponseWriter, r *http.Request, _ *session) {
	pins, err := c.k.Pins.List(r.Context())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	ver, err := c.k.Pins.Version(r.Context())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	out := make([]pinView, 0, len(pins))
	for _, p := range pins {
		v := pinView{Pin: p}
		switch {
		case p.Pending != nil:
			v.Changes = changes(p.Definition, p.Pending.Definition)
			v.Why = pendingWhy(p.Pending)
		case p.Flagged != nil:
			v.Why = "offered with an alert: its definition has " + p.Flagged.Summary()
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"pins": out, "version": ver})
}

func pendingWhy(p *mcppin.Pending) string {
	found := "."
	if p.Findings != nil {
		found = ", and its definition has " + p.Findings.Summary() + "."
	}
	switch {
	case p.Reason == mcppin.ReasonUnsigned:
		return "Its pin in the shared database is not signed by an Overseer instance" + found
	case p.Reason == mcppin.ReasonNotLatest:
		return "Its pin in the shared database does not hold the definition last accepted (deleted, or an older one put back)" + found
	case p.Reason == "poisoned" && p.Findings != nil:
		return "New, and its definition has " + p.Findings.Summary() + "."
	case p.Findings != nil:
		return "Its definition changed since it was accepted, and the new one has " + p.Findings.Summary() + "."
	}
	return "Its definition changed since it was accepted."
}

// apiAcceptPin accepts a pending definition, bound to the hash the person
// was shown. The path names the server and the tool (the prompt, or the
// resource's URI, escaped); the body the hash and the kind.
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
