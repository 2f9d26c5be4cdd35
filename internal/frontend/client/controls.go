package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// AutoRules lists the auto-rules by priority, with their counts.
func (c *Client) AutoRules(ctx context.Context) ([]autorule.Rule, error) {
	var out []autorule.Rule
	return out, c.do(ctx, "GET", "/api/v1/auto-rules", nil, &out)
}

// PutAutoRule replaces an auto-rule (by its ID) as who; its counts are
// kept by the daemon.
func (c *Client) PutAutoRule(ctx context.Context, r autorule.Rule, who string) (autorule.Rule, error) {
	var out autorule.Rule
	return out, c.do(ctx, "PUT", "/api/v1/auto-rules/"+url.PathEscape(r.ID), withWho(r, who), &out)
}

// RuleLogEntry is one firing of an auto-rule (the rule log).
type RuleLogEntry struct {
	Seq      int64             `json:"seq"`
	Time     string            `json:"time"`
	ActionID string            `json:"action_id,omitempty"`
	Agent    string            `json:"agent,omitempty"`
	Tool     string            `json:"tool,omitempty"`
	Fired    *kernel.RuleFired `json:"fired"`
}

// RuleLog returns the last limit firings of rule (empty: of every rule),
// newest first.
func (c *Client) RuleLog(ctx context.Context, rule string, limit int) ([]RuleLogEntry, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if rule != "" {
		q.Set("rule", rule)
	}
	var out []RuleLogEntry
	return out, c.do(ctx, "GET", "/api/v1/auto-rules/log?"+q.Encode(), nil, &out)
}

// AnomalyRules lists the anomaly rules.
func (c *Client) AnomalyRules(ctx context.Context) ([]autorule.AnomalyRule, error) {
	var out []autorule.AnomalyRule
	return out, c.do(ctx, "GET", "/api/v1/anomaly/rules", nil, &out)
}

// PutAnomalyRule replaces an anomaly rule (by its ID) as who.
func (c *Client) PutAnomalyRule(ctx context.Context, r autorule.AnomalyRule, who string) (autorule.AnomalyRule, error) {
	var out autorule.AnomalyRule
	return out, c.do(ctx, "PUT", "/api/v1/anomaly/rules/"+url.PathEscape(r.ID), withWho(r, who), &out)
}

// AnomalyEvents lists the anomalies detected, newest first, with their
// rollbacks.
func (c *Client) AnomalyEvents(ctx context.Context) ([]kernel.AnomalyEvent, error) {
	var out []kernel.AnomalyEvent
	return out, c.do(ctx, "GET", "/api/v1/anomaly/events", nil, &out)
}
