package mcpgw

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/proc"
	"github.com/overseer-dev/overseer/internal/store"
)

// closeGrace bounds how long Close waits for calls in flight.
const closeGrace = 3 * time.Second

// askerOf is the asker of a call's request: the stdio client's process,
// when known. Calls over streamable HTTP name none (their client is not a
// process of this host); their requests are withdrawn when the held call
// ends without them, else left to the deadline.
func (g *Gateway) askerOf(req *mcp.CallToolRequest) *store.Asker {
	if g.client == nil || g.session(req) != g.instance {
		return nil
	}
	a := *g.client
	return &a
}

// abandoned is called when the client stopped waiting for a held call
// (ctx ended): the request is withdrawn — unless the client only lost its
// connection to this stdio gateway and still runs, for it may restart the
// gateway and retry the call, which then picks the request up.
func (g *Gateway) abandoned(ctx context.Context, apr *store.Approval) {
	cause := context.Cause(ctx)
	reason := "the MCP client cancelled the call"
	if !errors.Is(cause, context.Canceled) {
		reason = "the MCP client went away"
		if apr.Session == g.instance && g.client != nil &&
			proc.Check(proc.Identity{PID: g.client.PID, Start: g.client.Start, Host: g.client.Host}) != proc.Gone {
			g.logf("the client disconnected while %s waited; it is kept for the client's retry", apr.ID)
			return
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, _, err := g.k.Withdraw(wctx, apr.ID, reason); err != nil {
		g.logf("withdrawing %s: %v", apr.ID, err)
	}
	g.recent.drop(keyOf(apr))
}

// restore finds the requests that earlier gateways of this session left
// open, or answered within the retry window, so that the client's
// identical retries pick them up instead of asking again.
func (g *Gateway) restore() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	aps, err := g.k.Store.ListApprovals(ctx, store.ApprovalFilter{Session: g.instance})
	if err != nil {
		g.logf("finding the requests of earlier gateways: %v", err)
		return
	}
	window := g.k.Gate.Config().RetryWindow
	now := g.clk.Now()
	for _, apr := range aps {
		if apr.Session != g.instance {
			continue
		}
		switch {
		case apr.Status == store.StatusPending:
		case apr.Status == store.StatusWithdrawn || apr.Answer == nil || now.Sub(apr.Answer.At) > window:
			continue
		}
		g.recent.put(keyOf(apr), apr.ID) // newest last: it wins
	}
}
