package client

import (
	"context"
	"net/url"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// PausedAgents lists the paused agents.
func (c *Client) PausedAgents(ctx context.Context) ([]store.AgentPause, error) {
	var out struct {
		Paused []store.AgentPause `json:"paused"`
	}
	return out.Paused, c.do(ctx, "GET", "/api/v1/agents/paused", nil, &out)
}

// PauseAgent pauses agent as who.
func (c *Client) PauseAgent(ctx context.Context, agent, reason, who string) error {
	return c.do(ctx, "POST", "/api/v1/agents/"+url.PathEscape(agent)+"/pause", map[string]string{"reason": reason, "who": who}, nil)
}

// ResumeAgent resumes agent as who.
func (c *Client) ResumeAgent(ctx context.Context, agent, who string) error {
	return c.do(ctx, "POST", "/api/v1/agents/"+url.PathEscape(agent)+"/resume", map[string]string{"who": who}, nil)
}

// Agents lists the agents Overseer has seen, with their trust.
func (c *Client) Agents(ctx context.Context) ([]*kernel.AgentTrust, error) {
	var out []*kernel.AgentTrust
	return out, c.do(ctx, "GET", "/api/v1/agents", nil, &out)
}

// AgentRecord returns an agent's record: what it did, its violations, its
// trust history and the grant a promotion would propose.
func (c *Client) AgentRecord(ctx context.Context, agent string) (*kernel.AgentRecord, error) {
	var out kernel.AgentRecord
	return &out, c.do(ctx, "GET", "/api/v1/agents/"+url.PathEscape(agent), nil, &out)
}

// PromoteAgent promotes an agent one step.
func (c *Client) PromoteAgent(ctx context.Context, agent string, req httpapi.PromoteRequest) (*kernel.TrustChange, error) {
	var out kernel.TrustChange
	return &out, c.do(ctx, "POST", "/api/v1/agents/"+url.PathEscape(agent)+"/promote", req, &out)
}

// DemoteAgent demotes an agent one step.
func (c *Client) DemoteAgent(ctx context.Context, agent string, req httpapi.DemoteRequest) (*kernel.TrustChange, error) {
	var out kernel.TrustChange
	return &out, c.do(ctx, "POST", "/api/v1/agents/"+url.PathEscape(agent)+"/demote", req, &out)
}
