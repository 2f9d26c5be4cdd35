package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/store"
)

// Security alerts: what the audit log records that a person should be
// told of at once, though nothing waits for an answer.
const (
	AlertInjection     = "prompt_injection" // a tool result carries instructions aimed at the model
	AlertResultSecret  = "secret_in_result" // a tool result carries a secret
	AlertResultUnknown = "result_unscanned" // a tool result could not be scanned
	AlertRugPull       = "mcp_rug_pull"     // an MCP definition changed since it was accepted
	AlertPoisonedTool  = "mcp_poisoned"     // an MCP definition aimed at the model
	AlertSecretEgress  = "secret_egress"    // a request carrying a secret was blocked
)

// alertRecord is the part of an audit alert record that is read here (the
// kernel's Alert: a result's scan, or an MCP definition's pin).
type alertRecord struct {
	Kind     string `json:"kind"`
	Summary  string `json:"summary"`
	Server   string `json:"server"`
	Tool     string `json:"tool"`
	Findings *struct {
		Injection json.RawMessage   `json:"injection"`
		Secrets   []json.RawMessage `json:"secrets"`
		Unscanned string            `json:"unscanned"`
	} `json:"findings"`
	Detail *struct {
		Kind    string `json:"kind"`
		Pending *struct {
			Reason string `json:"reason"`
		} `json:"pending"`
		Flagged json.RawMessage `json:"flagged"`
	} `json:"detail"`
}

// AlertOf returns the security alert an audit record calls for, if any:
//
//   - an alert record of a tool result (prompt injection, a secret, or a
//     result that could not be scanned);
//   - an alert record of an MCP definition (a rug pull: changed since it
//     was accepted; or poisoned: text aimed at the model), withheld or
//     flagged;
//   - a verdict that blocked a request carrying a secret (egress.secret).
//     A request put to a person is not alerted apart: its approval
//     message already names the secret.
//
// The message has a title and a summary (no secret: findings are masked
// where they are recorded) and nothing to answer.
func AlertOf(rec store.AuditRecord) (*Message, bool) {
	switch rec.Type {
	case audit.TypeAlert:
		var a alertRecord
		if json.Unmarshal(rec.Data, &a) != nil {
			return nil, false
		}
		who := whoOf(rec)
		switch a.Kind {
		case "result":
			name, what := AlertResultUnknown, "a tool result Overseer could not scan"
			if a.Findings != nil {
				switch {
				case len(a.Findings.Injection) > 0 && string(a.Findings.Injection) != "null":
					name, what = AlertInjection, "possible prompt injection in a tool result"
				case len(a.Findings.Secrets) > 0:
					name, what = AlertResultSecret, "a secret in a tool result"
				}
			}
			m := securityAlert(name, fmt.Sprintf("Overseer alert: %s (%s)", what, orDash(rec.Tool)), a.Summary+who, rec)
			m.Tool, m.ActionID = rec.Tool, rec.ActionID
			return m, true
		case "mcp_definition":
			name, what := AlertPoisonedTool, "suspicious MCP definition"
			if a.Detail != nil && a.Detail.Pending != nil && a.Detail.Pending.Reason == "changed" {
				name, what = AlertRugPull, "MCP definition changed"
			}
			kind := "tool"
			if a.Detail != nil && a.Detail.Kind != "" {
				kind = strings.ReplaceAll(a.Detail.Kind, "_", " ")
			}
			state := "withheld until you accept it on the console"
			if a.Detail == nil || a.Detail.Pending == nil {
				state = "offered, flagged"
			}
			m := securityAlert(name, fmt.Sprintf("Overseer alert: %s: %s %s of server %s", what, kind, a.Tool, a.Server),
				a.Summary+" ("+state+")", rec)
			m.Tool = rec.Tool
			return m, true
		}
	case audit.TypeVerdict:
		var v action.Verdict
		if json.Unmarshal(rec.Data, &v) != nil || v.Level != action.Block {
			return nil, false
		}
		for _, r := range v.Reasons {
			if r.Name == "egress.secret" {
				m := securityAlert(AlertSecretEgress, fmt.Sprintf("Overseer alert: %s tried to send a secret (blocked)", orDash(rec.Tool)),
					r.Message+whoOf(rec), rec)
				m.Tool, m.ActionID, m.Preview = rec.Tool, rec.ActionID, v.Preview
				return m, true
			}
		}
	}
	return nil, false
}

func securityAlert(name, title, text string, rec store.AuditRecord) *Message {
	m := AlertMessage(name, title, clip(text, 2*maxDetail), rec.Time)
	m.Security = true
	m.Agent, m.Session = rec.Agent, rec.Session
	return m
}

func whoOf(rec store.AuditRecord) string {
	var w []string
	if rec.Agent != "" {
		w = append(w, "agent "+rec.Agent)
	}
	if rec.Session != "" {
		w = append(w, "session "+rec.Session)
	}
	if len(w) == 0 {
		return ""
	}
	return " — " + strings.Join(w, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// MaxAlertsPerPoll caps the alerts sent for one read of the audit log;
// the rest are counted in one more message.
const MaxAlertsPerPoll = 10

// FollowAlerts sends the security alerts of new audit records (AlertOf)
// to every channel, until ctx ends. read returns the records after a
// sequence number, oldest first; after is where to start (the log's tail
// when the daemon starts: history is not replayed). open, when not nil,
// gives the console's address for an alert (its Links.Open).
func (n *Notifier) FollowAlerts(ctx context.Context, read func(ctx context.Context, after int64) ([]store.AuditRecord, error),
	after int64, open func(m *Message) string) error {
	for {
		recs, err := read(ctx, after)
		if err != nil && ctx.Err() == nil {
			n.opts.Logf("notify: reading the audit log for alerts: %v", err)
		}
		sent, skipped := 0, 0
		for _, rec := range recs {
			after = max(after, rec.Seq)
			m, ok := AlertOf(rec)
			if !ok {
				continue
			}
			if sent == MaxAlertsPerPoll {
				skipped++
				continue
			}
			sent++
			if open != nil {
				m.Links.Open = open(m)
			}
			if err := n.Alert(ctx, m); err != nil && ctx.Err() == nil {
				n.opts.Logf("notify: alert %s: %v", m.Alert, err)
			}
		}
		if skipped > 0 {
			m := AlertMessage("alerts_skipped", "Overseer alert: more alerts", fmt.Sprintf("%d more security alerts were recorded; see the console's audit log", skipped),
				n.opts.Clock.Now())
			m.Security = true
			if open != nil {
				m.Links.Open = open(m)
			}
			if err := n.Alert(ctx, m); err != nil && ctx.Err() == nil {
				n.opts.Logf("notify: alerts: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.opts.Clock.After(n.opts.Poll):
		}
	}
}

// alertPollLimit is how many records one read returns at most.
const alertPollLimit = 500

// AuditReader reads audit records after a sequence number from a store,
// for FollowAlerts.
func AuditReader(st store.Store) func(ctx context.Context, after int64) ([]store.AuditRecord, error) {
	return func(ctx context.Context, after int64) ([]store.AuditRecord, error) {
		return st.QueryAudit(ctx, store.AuditQuery{AfterSeq: after, Types: []string{audit.TypeAlert, audit.TypeVerdict}, Limit: alertPollLimit})
	}
}
