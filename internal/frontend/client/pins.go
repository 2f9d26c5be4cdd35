package client

import (
	"context"
	"net/url"

	"github.com/overseer-dev/overseer/internal/mcppin"
)

// PinAccept is the body of an acceptance of a pending MCP definition.
type PinAccept struct {
	Hash    string `json:"hash"`
	Who     string `json:"who,omitempty"`
	Channel string `json:"channel,omitempty"`
	Kind    string `json:"kind,omitempty"`
}

// MCPPins lists the MCP gateway's pinned definitions, with the pending
// changes a person may accept.
func (c *Client) MCPPins(ctx context.Context) ([]mcppin.Pin, error) {
	var out struct {
		Pins []mcppin.Pin `json:"pins"`
	}
	return out.Pins, c.do(ctx, "GET", "/api/v1/mcp/pins", nil, &out)
}

// AcceptMCPPin accepts the pending definition of a tool (prompt, resource:
// name is its URI) of server, bound to the hash the person was shown.
func (c *Client) AcceptMCPPin(ctx context.Context, server, name string, req PinAccept) (*mcppin.Pin, error) {
	var out mcppin.Pin
	return &out, c.do(ctx, "POST", "/api/v1/mcp/pins/"+url.PathEscape(server)+"/"+url.PathEscape(name)+"/accept", req, &out)
}
