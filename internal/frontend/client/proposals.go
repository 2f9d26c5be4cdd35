package client

import (
	"context"
	"net/url"

	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// ProposalAnswer is the body of an accept or a dismiss of a proposal.
type ProposalAnswer struct {
	Who     string       `json:"who,omitempty"`
	Version string       `json:"version,omitempty"`
	Rule    *policy.Rule `json:"rule,omitempty"`
}

// AcceptResponse is the daemon's answer to an accept.
type AcceptResponse struct {
	Rule     *store.UserRule  `json:"rule"`
	Proposal *kernel.Proposal `json:"proposal"`
}

// Proposals lists the open proposals of learned trust.
func (c *Client) Proposals(ctx context.Context) ([]kernel.Proposal, error) {
	var out []kernel.Proposal
	return out, c.do(ctx, "GET", "/api/v1/proposals", nil, &out)
}

// Proposal returns one open proposal.
func (c *Client) Proposal(ctx context.Context, id string) (*kernel.Proposal, error) {
	var out kernel.Proposal
	return &out, c.do(ctx, "GET", "/api/v1/proposals/"+url.PathEscape(id), nil, &out)
}

// AcceptProposal accepts a proposal (or the person's edit of its rule).
func (c *Client) AcceptProposal(ctx context.Context, id string, req ProposalAnswer) (*AcceptResponse, error) {
	var out AcceptResponse
	return &out, c.do(ctx, "POST", "/api/v1/proposals/"+url.PathEscape(id)+"/accept", req, &out)
}

// DismissProposal dismisses a proposal.
func (c *Client) DismissProposal(ctx context.Context, id string, req ProposalAnswer) error {
	return c.do(ctx, "POST", "/api/v1/proposals/"+url.PathEscape(id)+"/dismiss", req, nil)
}

// ReplayRule is the dry run of a rule over the audit trail.
func (c *Client) ReplayRule(ctx context.Context, r policy.Rule) (*firewall.ReplayReport, error) {
	var out firewall.ReplayReport
	return &out, c.do(ctx, "POST", "/api/v1/policy/replay", map[string]any{"rule": r}, &out)
}

// UserRules lists the rules of the user layer.
func (c *Client) UserRules(ctx context.Context) ([]store.UserRule, error) {
	var p struct {
		User []store.UserRule `json:"user"`
	}
	return p.User, c.do(ctx, "GET", "/api/v1/policy", nil, &p)
}

// RemoveUserRule removes a rule of the user layer.
func (c *Client) RemoveUserRule(ctx context.Context, id, who string) error {
	return c.do(ctx, "DELETE", "/api/v1/policy/rules/"+url.PathEscape(id)+"?who="+url.QueryEscape(who), nil, nil)
}
