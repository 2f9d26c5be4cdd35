package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/store"
)

// API is what the terminal UI needs from the daemon.
type API interface {
	// Pending returns the approvals waiting for an answer, oldest first.
	Pending(ctx context.Context) ([]*store.Approval, error)
	// Answer answers approval id (approve, deny or abort).
	Answer(ctx context.Context, id, decision string, req client.AnswerRequest) (*client.AnswerResponse, error)
	// AuditAfter returns up to limit audit records after seq, oldest first;
	// with seq < 0, the newest limit records.
	AuditAfter(ctx context.Context, seq int64, limit int) ([]store.AuditRecord, error)
	// ProposedRule returns the rule "remember as a rule" would save.
	ProposedRule(ctx context.Context, id string) (json.RawMessage, error)
}

// ClientAPI is the API over the daemon's HTTP API client.
type ClientAPI struct {
	C *client.Client
}

var _ API = ClientAPI{}

// Pending implements API.
func (a ClientAPI) Pending(ctx context.Context) ([]*store.Approval, error) {
	return a.C.Approvals(ctx, "pending")
}

// Answer implements API.
func (a ClientAPI) Answer(ctx context.Context, id, decision string, req client.AnswerRequest) (*client.AnswerResponse, error) {
	return a.C.Answer(ctx, id, decision, req)
}

// AuditAfter implements API.
func (a ClientAPI) AuditAfter(ctx context.Context, seq int64, limit int) ([]store.AuditRecord, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if seq >= 0 {
		q.Set("after", strconv.FormatInt(seq, 10))
		q.Set("order", "asc")
	}
	var recs []store.AuditRecord
	if err := a.get(ctx, "/api/v1/audit?"+q.Encode(), &recs); err != nil {
		return nil, err
	}
	if seq < 0 { // newest first from the daemon; the tail reads oldest first
		for i, j := 0, len(recs)-1; i < j; i, j = i+1, j-1 {
			recs[i], recs[j] = recs[j], recs[i]
		}
	}
	return recs, nil
}

// ProposedRule implements API.
func (a ClientAPI) ProposedRule(ctx context.Context, id string) (json.RawMessage, error) {
	var v struct {
		Proposed json.RawMessage `json:"proposed_rule"`
	}
	if err := a.get(ctx, "/api/v1/approvals/"+url.PathEscape(id), &v); err != nil {
		return nil, err
	}
	return v.Proposed, nil
}

func (a ClientAPI) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.C.Base+path, nil)
	if err != nil {
		return err
	}
	check := a.C.Sign(req)
	hc := a.C.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := check(resp); err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var e struct {
			Error client.APIError `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			e.Error.Status = resp.StatusCode
			return &e.Error
		}
		return fmt.Errorf("daemon: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
