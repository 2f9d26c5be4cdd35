// Package mcptool is the Tool plugin "tool.mcp": an MCP client that offers
// the tools of configured MCP servers (stdio commands or streamable HTTP
// URLs) to Overseer's own agent loop.
//
// A server's tools are offered as "<server>__<tool>", with the canonical
// kind configured for the tool (else "mcp"), its description and its input
// schema. The plugin executes; it never decides: a call reaches Execute
// only after the firewall judged it, exactly like a call of any other
// tool, and the arguments are passed to the server as they were judged.
//
// Servers start lazily, on the first Tools or Execute, and are listed
// once; a server that stops is restarted on the call after the one that
// found it stopped, with a backoff when it keeps failing. Close stops every
// server process and, on Unix, every process left in its process group.
package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/mcpshared"
	"github.com/overseer-dev/overseer/plugin"
)

// ID is the plugin's registration ID.
const ID = "tool.mcp"

func init() {
	plugin.Register(plugin.Info{ID: ID, New: func(raw json.RawMessage) (any, error) {
		cfg, err := ParseConfig(raw)
		if err != nil {
			return nil, err
		}
		return New(context.Background(), cfg)
	}})
}

// Sep separates the server's name from its tool's name.
const Sep = mcpshared.Sep

// KindMCP is the kind of a tool without a configured mapping.
const KindMCP = "mcp"

// Sentinel errors.
var (
	// ErrConfig means the configuration is not valid.
	ErrConfig = errors.New("mcp tools: invalid configuration")
	// ErrUnknownTool means the call names no tool this plugin offers.
	ErrUnknownTool = errors.New("mcp tools: unknown tool")
	// ErrUnavailable means the tool's server is not running: it could not
	// be started, it stopped, or it is waiting out its restart backoff.
	ErrUnavailable = errors.New("mcp tools: server unavailable")
	// ErrTimeout means a call did not complete within its call_timeout.
	ErrTimeout = errors.New("mcp tools: call timed out")
	// ErrClosed means the client was closed.
	ErrClosed = errors.New("mcp tools: closed")
)

// Client offers the tools of the configured MCP servers. It is safe for
// concurrent use; Close stops its server processes.
type Client struct {
	servers map[string]*server
	order   []string // names of the servers not hidden, sorted
	maxOut  int
	clk     clock.Clock
	stderr  io.Writer
	version string

	// base ends when the client closes; it bounds every connection.
	base   context.Context
	cancel context.CancelFunc

	closeOnce sync.Once
	closeErr  error
}

var (
	_ plugin.Tool = (*Client)(nil)
	_ io.Closer   = (*Client)(nil)
)

// Option adjusts a Client.
type Option func(*Client)

// WithClock sets the clock the restart backoff is measured by.
func WithClock(c clock.Clock) Option { return func(cl *Client) { cl.clk = c } }

// WithStderr copies what stdio servers write to their stderr to w, each
// line prefixed with "[server] ". By default it is discarded (the last
// lines are kept for the error when a server fails).
func WithStderr(w io.Writer) Option { return func(cl *Client) { cl.stderr = w } }

// WithVersion sets the version the client announces to servers.
func WithVersion(v string) Option { return func(cl *Client) { cl.version = v } }

// New validates cfg and builds a Client. It starts no process: each server
// is started on its first use (Tools or Execute). ctx is only checked.
func New(ctx context.Context, cfg Config, opts ...Option) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{servers: map[string]*server{}, maxOut: cfg.MaxOutputBytes, clk: clock.Real{}, version: "dev"}
	if c.maxOut == 0 {
		c.maxOut = DefaultMaxOutputBytes
	}
	for _, o := range opts {
		o(c)
	}
	c.base, c.cancel = context.WithCancel(context.Background())
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		sc := *cfg.Servers[name]
		if sc.Hidden {
			continue
		}
		c.servers[name] = newServer(c, name, &sc)
		c.order = append(c.order, name)
	}
	return c, nil
}

// Tools lists the tools of every server. A server not listed yet is
// started (all of them at once); a server listed before is not contacted
// again, so the listing stays cheap and keeps the tools of a server that
// is restarting. The error names every server that could not be listed.
func (c *Client) Tools(ctx context.Context) ([]plugin.ToolSpec, error) {
	if c.base.Err() != nil {
		return nil, ErrClosed
	}
	errs := make([]error, len(c.order))
	var wg sync.WaitGroup
	for i, name := range c.order {
		s := c.servers[name]
		if !s.needsListing() {
			continue
		}
		wg.Go(func() { errs[i] = s.ensureListed(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var specs []plugin.ToolSpec
	for _, name := range c.order {
		specs = append(specs, c.servers[name].listedSpecs()...)
	}
	return specs, nil
}

// Execute calls the tool named "<server>__<tool>" with the call's
// arguments, unchanged. The result's text content is joined into Output
// (other content is summarised), IsError is the server's isError, and Meta
// holds the server, the tool and any structured content. A failure to
// reach the server or a protocol error is returned as an error. Call.Cwd
// is not used: a server runs in its configured directory.
func (c *Client) Execute(ctx context.Context, call plugin.Call) (plugin.Result, error) {
	if c.base.Err() != nil {
		return plugin.Result{}, ErrClosed
	}
	name, tool, ok := strings.Cut(call.Tool, Sep)
	s := c.servers[name]
	if !ok || s == nil || tool == "" {
		return plugin.Result{}, fmt.Errorf("%w: %q", ErrUnknownTool, call.Tool)
	}
	if s.cfg.Hides(tool) {
		return plugin.Result{}, fmt.Errorf("%w: %q is hidden by the configuration", ErrUnknownTool, call.Tool)
	}
	return s.call(ctx, tool, call.Args)
}

// Mapping returns the configured kind and argument of a tool named
// "<server>__<tool>", for callers that derive the facts of a mapped tool
// whose argument has an unusual name.
func (c *Client) Mapping(tool string) (ToolMapping, bool) {
	name, t, ok := strings.Cut(tool, Sep)
	s := c.servers[name]
	if !ok || s == nil {
		return ToolMapping{}, false
	}
	m, ok := s.cfg.Tools[t]
	return m, ok
}

// Close stops every server: a stdio server's input is closed, then it is
// signalled, then killed, and on Unix whatever it started is killed with
// it. Calls after Close fail with ErrClosed. Close is idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.cancel()
		var errs []error
		for _, name := range c.order {
			if err := c.servers[name].stop(); err != nil {
				errs = append(errs, fmt.Errorf("stopping %s: %w", name, err))
			}
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
