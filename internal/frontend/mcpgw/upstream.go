package mcpgw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/mcpshared"
)

// State is the health of an upstream server.
type State string

// Upstream states.
const (
	StateStarting  State = "starting"  // the first connection is being made
	StateHealthy   State = "healthy"   // connected, answering
	StateUnhealthy State = "unhealthy" // crashed, unreachable or not answering; restarting with backoff
	StateStopped   State = "stopped"   // the gateway is closing
)

// TypeUpstream is the audit record type of an upstream's change of health.
const TypeUpstream = "mcp_upstream"

// ErrUnavailable means a call's upstream server is not connected.
var ErrUnavailable = errors.New("upstream unavailable")

// Timings shared with the tool.mcp plugin.
const (
	connectTimeout   = mcpshared.ConnectTimeout  // one connection attempt (process start and handshake)
	upstreamProtocol = mcpshared.ProtocolVersion // what the gateway asks its upstreams for
	stableAfter      = mcpshared.StableAfter     // how long a connection must last for the backoff to reset
)

// UpstreamHealth is the health of one upstream server.
type UpstreamHealth struct {
	Name     string    `json:"name"`
	State    State     `json:"state"`
	Error    string    `json:"error,omitempty"`
	Since    time.Time `json:"since"`
	Restarts int       `json:"restarts"`
	Tools    int       `json:"tools"`
}

// upstream is one configured server and the goroutine that keeps it
// connected.
type upstream struct {
	name    string
	cfg     *ServerConfig
	g       *Gateway
	ready   chan struct{} // closed after the first connection attempt ends
	once    sync.Once
	refresh chan struct{} // the server said a list changed

	mu     sync.Mutex
	cs     *mcp.ClientSession
	health UpstreamHealth
	lists  lists // as last listed
}

// lists are what an upstream offers.
type lists struct {
	tools     []*mcp.Tool
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
}

func newUpstream(g *Gateway, name string, cfg *ServerConfig) *upstream {
	return &upstream{
		name: name, cfg: cfg, g: g,
		ready:   make(chan struct{}),
		refresh: make(chan struct{}, 1),
		health:  UpstreamHealth{Name: name, State: StateStarting, Since: g.clk.Now()},
	}
}

// session returns the live client session, or an error wrapping
// ErrUnavailable.
func (u *upstream) session() (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs == nil || u.health.State != StateHealthy {
		msg := string(u.health.State)
		if u.health.Error != "" {
			msg += ": " + u.health.Error
		}
		return nil, fmt.Errorf("%w: %s is %s", ErrUnavailable, u.name, msg)
	}
	return u.cs, nil
}

func (u *upstream) snapshot() UpstreamHealth {
	u.mu.Lock()
	defer u.mu.Unlock()
	h := u.health
	h.Tools = len(u.lists.tools)
	return h
}

// setState records a change of health, and audits it.
func (u *upstream) setState(ctx context.Context, s State, cs *mcp.ClientSession, err error) {
	u.mu.Lock()
	prev := u.health.State
	u.cs = cs
	u.health.State = s
	u.health.Since = u.g.clk.Now()
	u.health.Error = ""
	if err != nil {
		u.health.Error = err.Error()
	}
	h := u.health
	u.mu.Unlock()
	if prev == s && s != StateUnhealthy {
		return
	}
	u.g.logf("upstream %s: %s%s", u.name, s, errSuffix(err))
	if s == StateStopped {
		return
	}
	// The record outlives the gateway's context: a crash is noticed even
	// while shutting down.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, aerr := u.g.k.Audit.Append(actx, audit.Entry{Type: TypeUpstream, Tool: u.name, Data: h}); aerr != nil {
		u.g.logf("upstream %s: recording its health: %v", u.name, aerr)
	}
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// run keeps the upstream connected until ctx ends: a crashed or
// unreachable server is marked unhealthy and reconnected with exponential
// backoff. Owned by the gateway; exits when ctx ends.
func (u *upstream) run(ctx context.Context) {
	initial, maxB := u.cfg.Restart.Range()
	backoff := initial
	for {
		started := u.g.clk.Now()
		err := u.connectAndServe(ctx)
		if ctx.Err() != nil {
			u.setState(ctx, StateStopped, nil, nil)
			u.once.Do(func() { close(u.ready) })
			return
		}
		u.setState(ctx, StateUnhealthy, nil, err)
		u.once.Do(func() { close(u.ready) })
		if u.g.clk.Now().Sub(started) >= stableAfter {
			backoff = initial
		}
		select {
		case <-ctx.Done():
			u.setState(ctx, StateStopped, nil, nil)
			return
		case <-u.g.clk.After(backoff):
		}
		backoff = min(backoff*2, maxB)
		u.mu.Lock()
		u.health.Restarts++
		u.mu.Unlock()
	}
}

// connectAndServe makes one connection, publishes what the server offers,
// and returns when the connection ends (with why) or ctx ends.
func (u *upstream) connectAndServe(ctx context.Context) error {
	t := u.transport()
	client := mcp.NewClient(&mcp.Implementation{Name: "overseer-gateway", Version: u.g.version}, &mcp.ClientOptions{
		Capabilities:               &mcp.ClientCapabilities{},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { u.poke() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { u.poke() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { u.poke() },
		ResourceUpdatedHandler: func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			u.g.resourceUpdated(ctx, r.Params)
		},
		LoggingMessageHandler: func(ctx context.Context, r *mcp.LoggingMessageRequest) {
			u.g.forwardLog(ctx, u.name, r.Params)
		},
		ProgressNotificationHandler: func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) {
			u.g.forwardProgress(ctx, r.Params)
		},
	})
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	// The gateway speaks the last session-based protocol version to its
	// upstreams: every server supports it, one session per server carries
	// the log level and the list notifications, and a call costs less than
	// with the per-request metadata of the newest version.
	cs, err := client.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: upstreamProtocol})
	cancel()
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	done := make(chan error, 1)
	// Owned here: ends when the connection closes, which every return path
	// below makes sure of.
	go func() { done <- cs.Wait() }()
	stop := func() { _ = cs.Close(); <-done }

	if err := u.list(ctx, cs); err != nil {
		stop()
		return fmt.Errorf("listing its tools: %w", err)
	}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil {
		// Its log messages are forwarded to clients, each at the level it set.
		_ = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"})
	}
	u.setState(ctx, StateHealthy, cs, nil)
	u.g.publish()
	u.once.Do(func() { close(u.ready) })

	ping := u.cfg.Ping.Get(DefaultPing)
	for {
		var tick <-chan time.Time
		if ping > 0 {
			tick = u.g.clk.After(ping)
		}
		select {
		case <-ctx.Done():
			stop()
			return ctx.Err()
		case err := <-done:
			_ = cs.Close()
			if err == nil {
				err = errors.New("the connection closed")
			}
			return fmt.Errorf("the server stopped: %w", err)
		case <-u.refresh:
			if err := u.list(ctx, cs); err != nil {
				u.g.logf("upstream %s: re-listing after a change: %v", u.name, err)
			} else {
				u.g.publish()
			}
		case <-tick:
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := cs.Ping(pctx, nil)
			cancel()
			if err != nil && ctx.Err() == nil {
				stop()
				return fmt.Errorf("it stopped answering: %w", err)
			}
		}
	}
}

// poke asks the serving loop to re-list (never blocks).
func (u *upstream) poke() {
	select {
	case u.refresh <- struct{}{}:
	default:
	}
}

// list reads everything the server offers (every page).
func (u *upstream) list(ctx context.Context, cs *mcp.ClientSession) error {
	var l lists
	caps := &mcp.ServerCapabilities{}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	if caps.Tools != nil {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			l.tools = append(l.tools, t)
		}
	}
	if caps.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return fmt.Errorf("listing prompts: %w", err)
			}
			l.prompts = append(l.prompts, p)
		}
	}
	if caps.Resources != nil {
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				return fmt.Errorf("listing resources: %w", err)
			}
			l.resources = append(l.resources, r)
		}
		for r, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				return fmt.Errorf("listing resource templates: %w", err)
			}
			l.templates = append(l.templates, r)
		}
	}
	u.mu.Lock()
	u.lists = l
	u.mu.Unlock()
	return nil
}

func (u *upstream) offered() lists {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lists
}

// transport builds a fresh transport for one connection attempt. What a
// stdio server writes to its stderr goes to the gateway's log, line by
// line, each line prefixed with the server's name.
func (u *upstream) transport() mcp.Transport {
	stderr := mcpshared.NewStderr(func(line []byte) { u.g.logf("[%s] %s", u.name, line) })
	t, _ := mcpshared.Transport(&u.cfg.Server, mcpshared.TransportOptions{Stderr: stderr})
	return t
}
