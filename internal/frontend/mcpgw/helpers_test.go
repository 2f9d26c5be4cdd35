package mcpgw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/frontend/mcpgw"
	"github.com/overseer-dev/overseer/internal/frontend/mcpgw/mcpgwtest"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

func TestMain(m *testing.M) {
	mcpgwtest.MaybeServe()
	os.Exit(m.Run())
}

// env is a kernel on a temporary home (real SQLite), a gateway in front of
// the test upstream (a real subprocess over stdio), and a fake clock.
type env struct {
	t   testing.TB
	k   *kernel.Kernel
	clk *clock.Fake
	gw  *mcpgw.Gateway
	dir string // files the tools write: outside the working directory
	cwd string
	cfg *mcpgw.Config
}

type envOpts struct {
	policy    string // admin policy YAML ("" = built-in)
	extra     string // more YAML at the top level of mcp.yaml
	servers   string // more servers (YAML, indented by two spaces)
	upstream  string // more settings of server "up" (indented by four spaces)
	tools     string // more tool mappings of server "up" (indented by six spaces)
	realClock bool   // the wall clock instead of a fake one (benchmarks)
}

const upstreamTools = `    tools:
      write_note: {kind: file_write, arg: path}
`

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	home := t.TempDir()
	e := &env{t: t, clk: clock.NewFake(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)), dir: t.TempDir(), cwd: t.TempDir()}
	var clk clock.Clock = e.clk
	if o.realClock {
		clk = clock.Real{}
	}
	kc := kernel.Config{Home: home, Clock: clk, Guards: mcpgw.KernelGuards, Poll: 20 * time.Millisecond}
	if o.policy != "" {
		kc.PolicyFile = filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(kc.PolicyFile, []byte(o.policy), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k, err := kernel.Open(context.Background(), kc)
	if err != nil {
		t.Fatal(err)
	}
	e.k = k
	exe, envv := mcpgwtest.Command(t)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	yaml := "hold: 5s\n" + o.extra + "servers:\n  up:\n    command: " + q(exe) + "\n    env:\n"
	for k, v := range envv {
		yaml += "      " + k + ": " + q(v) + "\n"
	}
	yaml += upstreamTools + o.tools + "    restart: {initial: 1s, max: 4s}\n" + o.upstream + o.servers
	cfg, err := mcpgw.ParseConfig("mcp.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	e.cfg = cfg
	gw, err := mcpgw.New(mcpgw.Options{Kernel: k, Config: cfg, Cwd: e.cwd, Log: &testLog{t: t}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	e.gw = gw
	t.Cleanup(func() {
		gw.Close()
		if rep, err := audit.Verify(context.Background(), k.Store); err != nil || !rep.OK {
			t.Errorf("the audit chain does not verify: %+v %v", rep, err)
		}
		k.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := gw.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// testLog sends the gateway's diagnostics to the test log while the test
// runs.
type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// client connects a Go SDK client to the gateway over in-memory pipes.
func (e *env) client(opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	e.t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.gw.Connect(ctx, st); err != nil {
		e.t.Fatal(err)
	}
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, opts).Connect(ctx, ct, so)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

func (e *env) call(cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// callAsync makes a call in the background.
func (e *env) callAsync(cs *mcp.ClientSession, name string, args map[string]any) <-chan *mcp.CallToolResult {
	ch := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "client error: " + err.Error()}}}
		}
		ch <- res
	}()
	return ch
}

// pending waits until n approvals are pending and returns them.
func (e *env) pending(n int) []*store.Approval {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		aps, err := e.k.Gate.Pending(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		if len(aps) >= n {
			return aps
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.t.Fatalf("no %d pending approvals", n)
	return nil
}

// answer answers an approval as a person through the CLI channel.
func (e *env) answer(id, decision, reason string) {
	e.t.Helper()
	if _, _, err := e.k.Answer(context.Background(), id, store.Answer{Decision: decision, Who: "ann", Channel: "cli", Reason: reason}); err != nil {
		e.t.Fatal(err)
	}
}

// advanceUntil moves the fake clock by step until ch delivers.
func advanceUntil[T any](e *env, step time.Duration, ch <-chan T) T {
	e.t.Helper()
	for i := 0; i < 3000; i++ {
		select {
		case v := <-ch:
			return v
		case <-time.After(10 * time.Millisecond):
			e.clk.Advance(step)
		}
	}
	e.t.Fatal("nothing arrived while the clock moved")
	var zero T
	return zero
}

// waitFor polls cond (real time) for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func overseerMeta(res *mcp.CallToolResult) map[string]any {
	m, _ := res.Meta[mcpgw.MetaKey].(map[string]any)
	return m
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// auditTypes lists the audit records' types for an action, in order.
func (e *env) auditTypes(actionID string) []string {
	e.t.Helper()
	recs, err := e.k.Store.QueryAudit(context.Background(), store.AuditQuery{ActionID: actionID})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Type)
	}
	return out
}

// wantAudit waits until the action's audit records are want (results are
// recorded just after the answer to the client).
func (e *env) wantAudit(actionID, want string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := strings.Join(e.auditTypes(actionID), ",")
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("audit records %s, want %s", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%q does not contain %q", s, sub)
	}
}

var _ = fmt.Sprint
