package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/mcpshared"
	"github.com/overseer-dev/overseer/plugin"
)

// Timings shared with the MCP gateway.
const (
	connectTimeout  = mcpshared.ConnectTimeout
	protocolVersion = mcpshared.ProtocolVersion
	stableAfter     = mcpshared.StableAfter
)

// server is one configured MCP server and its connection, if any.
type server struct {
	c     *Client
	name  string
	cfg   *ServerConfig
	stale atomic.Bool // the server said its tool list changed

	mu       sync.Mutex // guards the fields below; held while connecting
	sess     *session
	listed   bool
	specs    []plugin.ToolSpec
	tools    map[string]bool // its own names of the listed tools
	failures int             // consecutive failures (failed starts, short-lived connections)
	nextTry  time.Time       // no start before this
	lastErr  error
}

// session is one live connection.
type session struct {
	cs      *mcp.ClientSession
	done    chan struct{} // closed when the connection ended
	waitErr error         // why it ended; set before done is closed
	started time.Time
	pid     int // the stdio server's process (0 for URL servers)
	stderr  *mcpshared.Stderr
}

func newServer(c *Client, name string, cfg *ServerConfig) *server {
	return &server{c: c, name: name, cfg: cfg}
}

// ended reports whether the connection has ended.
func (ss *session) ended() bool {
	select {
	case <-ss.done:
		return true
	default:
		return false
	}
}

// close ends the connection and, for a stdio server, every process of its
// group. It waits for the connection's goroutine to exit.
func (ss *session) close() error {
	err := ss.cs.Close()
	<-ss.done
	var exit *exec.ExitError
	if errors.As(err, &exit) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, exec.ErrWaitDelay) {
		// It stopped, which is what was asked (a process it started kept
		// its output open; the process group went with it).
		err = nil
	}
	return err
}

func (s *server) needsListing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.listed || s.stale.Load()
}

func (s *server) listedSpecs() []plugin.ToolSpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.specs
}

// ensureListed lists the server's tools if they were never listed (which
// starts it) or if it said they changed (re-listed only while it runs; the
// last list is kept meanwhile).
func (s *server) ensureListed(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.listed {
		_, err := s.sessionLocked(ctx)
		return err
	}
	if s.stale.Load() && s.sess != nil && !s.sess.ended() {
		lctx, cancel := s.bound(ctx, connectTimeout)
		defer cancel()
		_ = s.listLocked(lctx, s.sess) // on failure the last list stays, and stale
	}
	return nil
}

// bound derives a context that also ends when the client closes, and
// after d when d > 0.
func (s *server) bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	var cancel context.CancelFunc
	if d > 0 {
		ctx, cancel = context.WithTimeout(ctx, d)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	stop := context.AfterFunc(s.c.base, cancel)
	return ctx, func() { stop(); cancel() }
}

// sessionLocked returns the live connection, starting the server if it is
// not running and its backoff allows. A connection found ended is an
// error: the next call starts the server again.
func (s *server) sessionLocked(ctx context.Context) (*session, error) {
	if s.c.base.Err() != nil {
		return nil, ErrClosed
	}
	if s.sess != nil {
		if !s.sess.ended() {
			return s.sess, nil
		}
		return nil, s.buryLocked("stopped")
	}
	now := s.c.clk.Now()
	if now.Before(s.nextTry) {
		return nil, fmt.Errorf("%w: %s is restarting: next attempt in %s (last error: %v)",
			ErrUnavailable, s.name, s.nextTry.Sub(now).Round(time.Millisecond), s.lastErr)
	}
	sess, err := s.connect(ctx)
	if err != nil {
		if s.c.base.Err() != nil {
			return nil, ErrClosed
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("starting %s: %w", s.name, ctx.Err())
		}
		s.failLocked(err)
		return nil, fmt.Errorf("%w: starting %s: %v%s", ErrUnavailable, s.name, err, s.retryHint())
	}
	s.sess = sess
	return sess, nil
}

// buryLocked forgets a connection that ended or broke, stops what is left
// of it, counts the failure and returns the error for the call that found
// it.
func (s *server) buryLocked(what string) error {
	sess := s.sess
	s.sess = nil
	_ = sess.close()
	cause := "the connection closed"
	if sess.waitErr != nil {
		cause = sess.waitErr.Error()
	}
	if t := sess.stderr.Tail(); t != "" {
		cause += "; its last output: " + t
	}
	if s.c.clk.Now().Sub(sess.started) >= stableAfter {
		s.failures = 0
	}
	err := fmt.Errorf("%s: %s", what, cause)
	s.failLocked(err)
	return fmt.Errorf("%w: %s %v%s", ErrUnavailable, s.name, err, s.retryHint())
}

// failLocked counts a failure and sets when the next start may be tried:
// at once after a first failure, then after the backoff, doubling.
func (s *server) failLocked(err error) {
	s.failures++
	s.lastErr = err
	s.nextTry = s.c.clk.Now().Add(s.delay(s.failures))
}

func (s *server) delay(failures int) time.Duration {
	if failures <= 1 {
		return 0
	}
	initial, maxB := s.cfg.Restart.Range()
	d := initial
	for i := 2; i < failures && d < maxB; i++ {
		d *= 2
	}
	return min(d, maxB)
}

func (s *server) retryHint() string {
	if d := s.nextTry.Sub(s.c.clk.Now()); d > 0 {
		return fmt.Sprintf("; it will be restarted in %s at the earliest", d.Round(time.Millisecond))
	}
	return "; it will be restarted on the next call"
}

// connect starts the server (or reaches it), makes the MCP handshake and
// lists its tools.
func (s *server) connect(ctx context.Context) (*session, error) {
	t, cmd, errLog := s.transport()
	client := mcp.NewClient(&mcp.Implementation{Name: "overseer", Version: s.c.version}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		// Called on the connection's goroutine: it must not wait for s.mu,
		// which a call holds while it waits for that goroutine.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.stale.Store(true) },
	})
	cctx, cancel := s.bound(ctx, connectTimeout)
	defer cancel()
	cs, err := client.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		if cmd != nil && cmd.Process != nil {
			mcpshared.KillGroup(cmd.Process.Pid)
		}
		if tail := errLog.Tail(); tail != "" {
			err = fmt.Errorf("%w; its last output: %s", err, tail)
		}
		return nil, err
	}
	sess := &session{cs: cs, done: make(chan struct{}), started: s.c.clk.Now(), stderr: errLog}
	if cmd != nil && cmd.Process != nil {
		sess.pid = cmd.Process.Pid
	}
	// Owned by the session: it exits when the connection ends, which
	// session.close makes sure of on every path that drops the session.
	// What the server started is killed the moment it is gone, before its
	// process group's ID could be reused.
	go func() {
		sess.waitErr = cs.Wait()
		mcpshared.KillGroup(sess.pid)
		close(sess.done)
	}()
	if err := s.listLocked(cctx, sess); err != nil {
		_ = sess.close()
		return nil, fmt.Errorf("listing its tools: %w", err)
	}
	return sess, nil
}

// listLocked reads the server's tools (every page) and keeps those not
// hidden.
func (s *server) listLocked(ctx context.Context, sess *session) error {
	var specs []plugin.ToolSpec
	tools := map[string]bool{}
	if ir := sess.cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Tools != nil {
		s.stale.Store(false)
		for t, err := range sess.cs.Tools(ctx, nil) {
			if err != nil {
				s.stale.Store(true)
				return err
			}
			if t == nil || t.Name == "" || s.cfg.Hides(t.Name) {
				continue
			}
			tools[t.Name] = true
			specs = append(specs, s.spec(t))
		}
	}
	s.specs, s.tools, s.listed = specs, tools, true
	return nil
}

// spec describes one of the server's tools as the plugin offers it.
func (s *server) spec(t *mcp.Tool) plugin.ToolSpec {
	kind := KindMCP
	if m, ok := s.cfg.Tools[t.Name]; ok {
		kind = string(m.Kind)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil || bytes.Equal(schema, []byte("null")) {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	return plugin.ToolSpec{Name: s.name + Sep + t.Name, Description: desc, InputSchema: schema, Kind: kind}
}

// call runs one tool call on the server.
func (s *server) call(ctx context.Context, tool string, args map[string]any) (plugin.Result, error) {
	s.mu.Lock()
	sess, err := s.sessionLocked(ctx)
	if err == nil && s.listed && !s.tools[tool] && !s.stale.Load() {
		err = fmt.Errorf("%w: %s offers no tool %q", ErrUnknownTool, s.name, tool)
	}
	s.mu.Unlock()
	if err != nil {
		return plugin.Result{}, err
	}
	if args == nil {
		args = map[string]any{}
	}
	timeout := s.cfg.CallTimeout.Get(DefaultCallTimeout)
	cctx, cancel := s.bound(ctx, timeout)
	defer cancel()
	res, err := sess.cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err == nil {
		if res == nil {
			return plugin.Result{}, fmt.Errorf("mcp tools: %s returned no result for %s", s.name, tool)
		}
		return convert(res, s.name, tool, s.c.maxOut), nil
	}
	var wire *jsonrpc.Error
	switch {
	case s.c.base.Err() != nil:
		return plugin.Result{}, ErrClosed
	case ctx.Err() != nil:
		return plugin.Result{}, fmt.Errorf("calling %s%s%s: %w", s.name, Sep, tool, ctx.Err())
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return plugin.Result{}, fmt.Errorf("%w: %s%s%s did not answer within %s", ErrTimeout, s.name, Sep, tool, timeout)
	case errors.As(err, &wire):
		// The server answered, with a protocol error.
		return plugin.Result{}, fmt.Errorf("mcp tools: %s refused the call of %s: %w", s.name, tool, err)
	}
	// The connection broke: it is dropped, and the next call starts the
	// server again.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != sess {
		return plugin.Result{}, fmt.Errorf("%w: %s stopped during the call: %v", ErrUnavailable, s.name, err)
	}
	return plugin.Result{}, s.buryLocked(fmt.Sprintf("stopped during the call (%v)", err))
}

// stop ends the connection, if any.
func (s *server) stop() error {
	s.mu.Lock()
	sess := s.sess
	s.sess = nil
	s.mu.Unlock()
	if sess == nil {
		return nil
	}
	return sess.close()
}

// transport builds a fresh transport for one connection attempt, with the
// command of a stdio server (nil for a URL server) and where its stderr
// goes.
func (s *server) transport() (mcp.Transport, *exec.Cmd, *mcpshared.Stderr) {
	var line func([]byte)
	if out := s.c.stderr; out != nil {
		line = func(l []byte) { fmt.Fprintf(out, "[%s] %s\n", s.name, l) }
	}
	errLog := mcpshared.NewStderr(line)
	t, cmd := mcpshared.Transport(s.cfg, mcpshared.TransportOptions{Stderr: errLog, ProcessGroup: true})
	return t, cmd, errLog
}
