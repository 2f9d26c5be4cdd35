package client

import (
	"context"
	"net/url"

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
