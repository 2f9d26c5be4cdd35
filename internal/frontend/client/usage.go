package client

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/overseer-dev/overseer/internal/usage"
)

// RateLimits lists the rate limits.
func (c *Client) RateLimits(ctx context.Context) ([]usage.RateLimit, error) {
	var out struct {
		RateLimits []usage.RateLimit `json:"rate_limits"`
	}
	return out.RateLimits, c.do(ctx, "GET", "/api/v1/rate-limits", nil, &out)
}

// PutRateLimit adds (no ID, or create) or replaces a rate limit as who.
func (c *Client) PutRateLimit(ctx context.Context, l usage.RateLimit, create bool, who string) (usage.RateLimit, error) {
	body := withWho(l, who)
	var out usage.RateLimit
	if create {
		return out, c.do(ctx, "POST", "/api/v1/rate-limits", body, &out)
	}
	return out, c.do(ctx, "PUT", "/api/v1/rate-limits/"+url.PathEscape(l.ID), body, &out)
}

// DeleteRateLimit removes a rate limit.
func (c *Client) DeleteRateLimit(ctx context.Context, id, who string) error {
	return c.do(ctx, "DELETE", "/api/v1/rate-limits/"+url.PathEscape(id)+"?who="+url.QueryEscape(who), nil, nil)
}

// RateUsage is each rate limit's count per agent.
func (c *Client) RateUsage(ctx context.Context) ([]usage.LimitUse, error) {
	var out struct {
		Usage []usage.LimitUse `json:"usage"`
	}
	return out.Usage, c.do(ctx, "GET", "/api/v1/rate-limits/usage", nil, &out)
}

// BudgetCaps lists the budget caps.
func (c *Client) BudgetCaps(ctx context.Context) ([]usage.BudgetCap, error) {
	var out struct {
		Caps []usage.BudgetCap `json:"caps"`
	}
	return out.Caps, c.do(ctx, "GET", "/api/v1/budget/caps", nil, &out)
}

// PutBudgetCap adds or replaces a budget cap as who.
func (c *Client) PutBudgetCap(ctx context.Context, cp usage.BudgetCap, create bool, who string) (usage.BudgetCap, error) {
	body := withWho(cp, who)
	var out usage.BudgetCap
	if create {
		return out, c.do(ctx, "POST", "/api/v1/budget/caps", body, &out)
	}
	return out, c.do(ctx, "PUT", "/api/v1/budget/caps/"+url.PathEscape(cp.ID), body, &out)
}

// DeleteBudgetCap removes a budget cap.
func (c *Client) DeleteBudgetCap(ctx context.Context, id, who string) error {
	return c.do(ctx, "DELETE", "/api/v1/budget/caps/"+url.PathEscape(id)+"?who="+url.QueryEscape(who), nil, nil)
}

// Budgets is every cap's spend in its current period.
func (c *Client) Budgets(ctx context.Context) ([]usage.Status, error) {
	var out struct {
		Caps []usage.Status `json:"caps"`
	}
	return out.Caps, c.do(ctx, "GET", "/api/v1/budget", nil, &out)
}

// Prices returns the budget's price table.
func (c *Client) Prices(ctx context.Context) (usage.Prices, error) {
	var out struct {
		Prices usage.Prices `json:"prices"`
	}
	return out.Prices, c.do(ctx, "GET", "/api/v1/budget/prices", nil, &out)
}

// SetPrices replaces the price table as who.
func (c *Client) SetPrices(ctx context.Context, p usage.Prices, who string) error {
	return c.do(ctx, "PUT", "/api/v1/budget/prices", map[string]any{"prices": p, "who": who}, nil)
}

// ReportUsage reports an agent's model use (cumulative: the session's
// totals so far).
func (c *Client) ReportUsage(ctx context.Context, agent, session, model string, in, out int64, cumulative bool) error {
	return c.do(ctx, "POST", "/api/v1/usage", map[string]any{"agent": agent, "session": session, "model": model,
		"input_tokens": in, "output_tokens": out, "cumulative": cumulative}, nil)
}

// withWho is v's JSON object with "who" added.
func withWho(v any, who string) map[string]any {
	m := map[string]any{}
	b, err := json.Marshal(v)
	if err == nil {
		_ = json.Unmarshal(b, &m)
	}
	if who != "" {
		m["who"] = who
	}
	return m
}
