package client

import (
	"context"
	"net/url"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// Grants lists the grants (activeOnly: those usable now).
func (c *Client) Grants(ctx context.Context, activeOnly bool) ([]kernel.GrantView, error) {
	var out []kernel.GrantView
	p := "/api/v1/grants"
	if activeOnly {
		p += "?active=1"
	}
	return out, c.do(ctx, "GET", p, nil, &out)
}

// Grant returns one grant.
func (c *Client) Grant(ctx context.Context, id string) (*kernel.GrantView, error) {
	var out kernel.GrantView
	return &out, c.do(ctx, "GET", "/api/v1/grants/"+url.PathEscape(id), nil, &out)
}

// IssueGrant issues a grant.
func (c *Client) IssueGrant(ctx context.Context, req httpapi.GrantRequest) (*kernel.Grant, error) {
	var out kernel.Grant
	return &out, c.do(ctx, "POST", "/api/v1/grants", req, &out)
}

// RevokeGrant revokes a grant.
func (c *Client) RevokeGrant(ctx context.Context, id string, req httpapi.RevokeRequest) (*kernel.Grant, error) {
	var out kernel.Grant
	return &out, c.do(ctx, "POST", "/api/v1/grants/"+url.PathEscape(id)+"/revoke", req, &out)
}
