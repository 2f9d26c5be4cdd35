package mcpgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/frontend/mcpgw"
	"github.com/overseer-dev/overseer/internal/frontend/mcpgw/mcpgwtest"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// A policy that blocks one tool outright (hidden), one only for some
// arguments (listed, blocked when they match), and lets crash and
// add_tool run.
const listPolicy = `version: 1
rules:
  - name: no-delete
    tool: up__delete_all
    level: block
  - name: big-args
    tool: up__args
    when: 'args.a > 100'
    level: block
  - name: testing-tools
    tool: [up__crash, up__add_tool]
    level: auto
`

func TestToolsAreNamespacedAndHidden(t *testing.T) {
	e := newEnv(t, envOpts{policy: listPolicy, upstream: "    hide_tools: [\"slo*\"]\n",
		servers: "  secret:\n    command: \"/nonexistent/never-started\"\n    hidden: true\n"})
	cs := e.client(nil, "")
	names := toolNames(t, cs)
	for _, want := range []string{"up__echo", "up__args", "up__write_note", "up__crash", "up__draft4"} {
		if !contains(names, want) {
			t.Errorf("%s is not listed: %v", want, names)
		}
	}
	for _, hidden := range []string{"up__delete_all", "up__slow", "echo", "secret__echo"} {
		if contains(names, hidden) {
			t.Errorf("%s is listed: %v", hidden, names)
		}
	}
	// A hidden tool cannot be called either.
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__delete_all"}); err == nil && !res.IsError {
		t.Fatalf("a hidden tool ran: %s", text(res))
	}

	// A person's rule that blocks a tool hides it; removing it shows it again.
	changed := make(chan struct{}, 8)
	cs2 := e.client(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}}, "")
	ur, err := e.k.AddUserRule(context.Background(), policy.Rule{Name: "no-echo", Tool: []string{"up__echo"}, Level: action.Block}, "ann", nil)
	if err != nil {
		t.Fatal(err)
	}
	advanceUntil(e, time.Second, changed)
	if names := toolNames(t, cs2); contains(names, "up__echo") {
		t.Fatalf("up__echo is still listed after a blocking rule: %v", names)
	}
	if err := e.k.RemoveUserRule(context.Background(), ur.ID, "ann"); err != nil {
		t.Fatal(err)
	}
	advanceUntil(e, time.Second, changed)
	if names := toolNames(t, cs2); !contains(names, "up__echo") {
		t.Fatalf("up__echo is not listed again: %v", names)
	}
}

func TestAnnotatedReadOnlyToolRunsAndIsAudited(t *testing.T) {
	e := newEnv(t, envOpts{})
	cs := e.client(nil, "")
	res := e.call(cs, "up__echo", map[string]any{"message": "hi"})
	if res.IsError || !strings.Contains(text(res), "echo: hi") {
		t.Fatalf("echo: %+v %s", res, text(res))
	}
	m := overseerMeta(res)
	if m["decision"] != "allow" || m["level"] != "auto" {
		t.Fatalf("meta %v", m)
	}
	id, _ := m["action_id"].(string)
	e.wantAudit(id, "action,verdict,result")
	recs, _ := e.k.Store.QueryAudit(context.Background(), store.AuditQuery{ActionID: id, Types: []string{"verdict"}})
	var v action.Verdict
	if err := json.Unmarshal(recs[0].Data, &v); err != nil || v.Decider == nil || v.Decider.Name != "mcp.read-only" {
		t.Fatalf("verdict %+v %v", v, err)
	}
	var a action.Action
	recs, _ = e.k.Store.QueryAudit(context.Background(), store.AuditQuery{ActionID: id, Types: []string{"action"}})
	if err := json.Unmarshal(recs[0].Data, &a); err != nil || a.Kind != action.KindMCP || a.Agent != "test-agent" || a.Tool != "up__echo" {
		t.Fatalf("action %+v %v", a, err)
	}
}

// TestCallTimeoutOff: a server whose call_timeout is "off" is given as
// long as the client's call takes, not no time at all.
func TestCallTimeoutOff(t *testing.T) {
	e := newEnv(t, envOpts{upstream: "    call_timeout: off\n"})
	res := e.call(e.client(nil, ""), "up__echo", map[string]any{"message": "hi"})
	if res.IsError || !strings.Contains(text(res), "echo: hi") {
		t.Fatalf("echo: %+v %s", res, text(res))
	}
}

func TestArgumentsCheckedAgainstTheSchema(t *testing.T) {
	e := newEnv(t, envOpts{policy: listPolicy})
	cs := e.client(nil, "")
	cases := []struct {
		name    string
		tool    string
		args    map[string]any
		isError bool
		want    []string
		not     []string
	}{
		{"valid", "up__args", map[string]any{"a": 1, "b": 2}, false, []string{`"a":1`, `"b":2`}, []string{"ignored"}},
		{"unknown stripped with a warning", "up__args", map[string]any{"a": 1, "zzz": "x"}, false,
			[]string{`"a":1`, "ignored unknown argument(s) zzz"}, []string{`"zzz":"x"`}},
		{"wrong type refused", "up__args", map[string]any{"a": "one"}, true, []string{"refused", "invalid arguments"}, []string{`"a"`}},
		{"missing required refused", "up__args", map[string]any{"b": 2}, true, []string{"refused"}, nil},
		{"blocked by a conditional rule", "up__args", map[string]any{"a": 1000}, true, []string{"blocked", "big-args"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.call(cs, c.tool, c.args)
			out := text(res)
			if res.IsError != c.isError {
				t.Fatalf("isError %v: %s", res.IsError, out)
			}
			for _, w := range c.want {
				mustContain(t, out, w)
			}
			for _, n := range c.not {
				if strings.Contains(out, n) {
					t.Fatalf("%q contains %q", out, n)
				}
			}
		})
	}
	// A refused call is recorded.
	recs, err := e.k.Store.QueryAudit(context.Background(), store.AuditQuery{Types: []string{"error"}, Tool: "up__args"})
	if err != nil || len(recs) != 2 {
		t.Fatalf("refusals recorded: %d %v", len(recs), err)
	}
	// A schema in a draft the validator cannot read puts the call to a
	// person, even for a tool the policy would let run.
	res := advanceUntil(e, time.Second, e.callAsync(cs, "up__draft4", map[string]any{"x": "y"}))
	mustContain(t, text(res), "pending approval")
	aps := e.pending(1)
	if aps[0].Verdict.Decider == nil || aps[0].Verdict.Decider.Name != "mcp.schema-unchecked" {
		t.Fatalf("decider %+v", aps[0].Verdict.Decider)
	}
}

// A write outside the working directory waits for a person; approved, it
// runs once and the file is written.
func TestHeldCallApproved(t *testing.T) {
	e := newEnv(t, envOpts{})
	cs := e.client(nil, "")
	path := filepath.Join(e.dir, "a.txt")
	ch := e.callAsync(cs, "up__write_note", map[string]any{"path": path, "text": "hello"})
	aps := e.pending(1)
	if aps[0].Kind != action.KindFileWrite || aps[0].Level != action.Confirm || aps[0].Tool != "up__write_note" {
		t.Fatalf("approval %+v", aps[0])
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("the file was written before the answer")
	}
	e.answer(aps[0].ID, "approve", "")
	res := <-ch
	if res.IsError {
		t.Fatalf("approved call failed: %s", text(res))
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello" {
		t.Fatalf("file %q %v", b, err)
	}
	m := overseerMeta(res)
	if m["approval_id"] != aps[0].ID {
		t.Fatalf("meta %v", m)
	}
	e.wantAudit(aps[0].ActionID, "action,verdict,approval_request,answer,approval_used,result")
}

func TestHeldCallDeniedWithTheirWords(t *testing.T) {
	e := newEnv(t, envOpts{})
	cs := e.client(nil, "")
	path := filepath.Join(e.dir, "b.txt")
	ch := e.callAsync(cs, "up__write_note", map[string]any{"path": path, "text": "x"})
	aps := e.pending(1)
	e.answer(aps[0].ID, "deny", "not in that folder")
	res := <-ch
	if !res.IsError {
		t.Fatalf("denied call ran: %s", text(res))
	}
	mustContain(t, text(res), `ann denied this call (via cli), saying: "not in that folder"`)
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a denied write was written")
	}
}

// The client times out: the call answers "pending approval", and the
// identical retry picks up the answer — once.
func TestPendingThenRetryPicksUpTheAnswer(t *testing.T) {
	e := newEnv(t, envOpts{})
	cs := e.client(nil, "")
	path := filepath.Join(e.dir, "c.txt")
	args := map[string]any{"path": path, "text": "later"}
	res := advanceUntil(e, time.Second, e.callAsync(cs, "up__write_note", args))
	if !res.IsError || overseerMeta(res)["decision"] != "pending" {
		t.Fatalf("want pending: %s", text(res))
	}
	id, _ := overseerMeta(res)["approval_id"].(string)
	mustContain(t, text(res), "pending approval "+id)
	mustContain(t, text(res), "overseer approve "+id)

	// While still pending, the retry waits on the same approval.
	res = advanceUntil(e, time.Second, e.callAsync(cs, "up__write_note", args))
	if overseerMeta(res)["approval_id"] != id {
		t.Fatalf("the retry opened another approval: %v", overseerMeta(res))
	}
	if n := len(e.pending(1)); n != 1 {
		t.Fatalf("%d approvals pending", n)
	}

	e.answer(id, "approve", "")
	res = e.call(cs, "up__write_note", args)
	if res.IsError {
		t.Fatalf("the retry after approval failed: %s", text(res))
	}
	if b, _ := os.ReadFile(path); string(b) != "later" {
		t.Fatalf("file %q", b)
	}
	// The approval let one call through: the next identical call asks again.
	res = advanceUntil(e, time.Second, e.callAsync(cs, "up__write_note", args))
	if overseerMeta(res)["decision"] != "pending" || overseerMeta(res)["approval_id"] == id {
		t.Fatalf("a second call rode on the approval: %s %v", text(res), overseerMeta(res))
	}
	// Other arguments never ride on an approval.
	other := map[string]any{"path": path, "text": "altered"}
	res = advanceUntil(e, time.Second, e.callAsync(cs, "up__write_note", other))
	if overseerMeta(res)["decision"] != "pending" {
		t.Fatalf("altered call: %s", text(res))
	}
}

func TestPendingThenDeniedRetryReportsTheDenial(t *testing.T) {
	e := newEnv(t, envOpts{})
	cs := e.client(nil, "")
	args := map[string]any{"path": filepath.Join(e.dir, "d.txt"), "text": "x"}
	res := advanceUntil(e, time.Second, e.callAsync(cs, "up__write_note", args))
	id, _ := overseerMeta(res)["approval_id"].(string)
	e.answer(id, "deny", "no")
	res = e.call(cs, "up__write_note", args)
	if !res.IsError || overseerMeta(res)["decision"] != "deny" {
		t.Fatalf("retry after a denial: %s", text(res))
	}
	mustContain(t, text(res), `saying: "no"`)
}

func TestAbortAsksTheAgentToStop(t *testing.T) {
	e := newEnv(t, envOpts{})
	cs := e.client(nil, "")
	ch := e.callAsync(cs, "up__write_note", map[string]any{"path": filepath.Join(e.dir, "e.txt"), "text": "x"})
	aps := e.pending(1)
	e.answer(aps[0].ID, "abort", "wrong task")
	mustContain(t, text(<-ch), "asked to stop the whole task")
}

// elicitationClient answers the gateway's question as a person would in
// the client: approve (or not) with a reason.
func elicitationClient(approve bool, action, reason string, asked *[]string, mu *sync.Mutex) *mcp.ClientOptions {
	return &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		*asked = append(*asked, req.Params.Message)
		mu.Unlock()
		return &mcp.ElicitResult{Action: action, Content: map[string]any{"approve": approve, "reason": reason}}, nil
	}}
}

func TestElicitation(t *testing.T) {
	cases := []struct {
		name     string
		version  string
		approve  bool
		action   string
		reason   string
		written  bool
		wantText string
	}{
		{"multi round-trip, approved", "", true, "accept", "", true, "wrote"},
		{"multi round-trip, declined", "", false, "decline", "", false, "denied this call (via mcp-elicitation)"},
		{"multi round-trip, not approved, with reason", "", false, "accept", "use the tmp dir", false, `saying: "use the tmp dir"`},
		{"legacy protocol, approved", "2025-11-25", true, "accept", "", true, "wrote"},
		{"legacy protocol, declined", "2025-06-18", false, "decline", "nope", false, "nope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, envOpts{extra: "elicitation: confirm\n"})
			var asked []string
			var mu sync.Mutex
			cs := e.client(elicitationClient(c.approve, c.action, c.reason, &asked, &mu), c.version)
			path := filepath.Join(e.dir, "f.txt")
			res := e.call(cs, "up__write_note", map[string]any{"path": path, "text": "x"})
			mustContain(t, text(res), c.wantText)
			if _, err := os.Stat(path); (err == nil) != c.written {
				t.Fatalf("written %v, want %v (%s)", err == nil, c.written, text(res))
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 || !strings.Contains(asked[0], "up__write_note") || !strings.Contains(asked[0], path) {
				t.Fatalf("the person was asked %q", asked)
			}
			aps, _ := e.k.Store.ListApprovals(context.Background(), store.ApprovalFilter{})
			if len(aps) != 1 || aps[0].Answer == nil || aps[0].Answer.Channel != mcpgw.ChannelElicitation ||
				aps[0].Answer.Who != "person at test-agent" {
				t.Fatalf("approvals %+v", aps)
			}
		})
	}
}

// An answer through the client is not a person's unless the person says
// so: by default the gateway never asks the client, so a client that
// answers yes to everything — a program the agent wrote and runs, which
// speaks MCP to the daemon's /mcp (no credential) or starts "overseer mcp"
// itself — cannot approve its own calls. Its call waits for a person on
// another channel, and runs once one approves.
func TestElicitationOffByDefault(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("protocol "+version, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			var asked []string
			var mu sync.Mutex
			cs := e.client(elicitationClient(true, "accept", "", &asked, &mu), version)
			path := filepath.Join(e.dir, "self.txt")
			ch := e.callAsync(cs, "up__write_note", map[string]any{"path": path, "text": "x"})
			aps := e.pending(1)
			if _, err := os.Stat(path); err == nil {
				t.Fatal("the call ran before a person answered")
			}
			e.answer(aps[0].ID, "approve", "")
			if res := <-ch; res.IsError {
				t.Fatal(text(res))
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 0 {
				t.Fatalf("the client was asked: %q", asked)
			}
			got, _ := e.k.Store.ListApprovals(context.Background(), store.ApprovalFilter{})
			if len(got) != 1 || got[0].Answer == nil || got[0].Answer.Channel == mcpgw.ChannelElicitation {
				t.Fatalf("approvals %+v", got)
			}
		})
	}
}

// Elicitation, when turned on, is limited to its level: an approve-level
// call (a destructive tool) is not put to the client under "confirm", and
// a dismissed prompt leaves the approval to other channels.
func TestElicitationLimits(t *testing.T) {
	t.Run("approve level is not asked through the client", func(t *testing.T) {
		e := newEnv(t, envOpts{extra: "elicitation: confirm\n"})
		var asked []string
		var mu sync.Mutex
		cs := e.client(elicitationClient(true, "accept", "", &asked, &mu), "")
		ch := e.callAsync(cs, "up__delete_all", nil)
		aps := e.pending(1)
		if aps[0].Level != action.Approve {
			t.Fatalf("level %s", aps[0].Level)
		}
		e.answer(aps[0].ID, "approve", "")
		if res := <-ch; res.IsError {
			t.Fatal(text(res))
		}
		if len(asked) != 0 {
			t.Fatalf("asked through the client: %q", asked)
		}
	})
	t.Run("off", func(t *testing.T) {
		e := newEnv(t, envOpts{extra: "elicitation: off\n"})
		var asked []string
		var mu sync.Mutex
		cs := e.client(elicitationClient(true, "accept", "", &asked, &mu), "")
		ch := e.callAsync(cs, "up__write_note", map[string]any{"path": filepath.Join(e.dir, "g"), "text": "x"})
		e.answer(e.pending(1)[0].ID, "approve", "")
		if res := <-ch; res.IsError || len(asked) != 0 {
			t.Fatalf("%s, asked %q", text(res), asked)
		}
	})
	t.Run("dismissed prompt, answered elsewhere", func(t *testing.T) {
		e := newEnv(t, envOpts{extra: "elicitation: confirm\n"})
		var asked []string
		var mu sync.Mutex
		cs := e.client(elicitationClient(false, "cancel", "", &asked, &mu), "")
		ch := e.callAsync(cs, "up__write_note", map[string]any{"path": filepath.Join(e.dir, "h"), "text": "x"})
		e.answer(e.pending(1)[0].ID, "approve", "")
		if res := <-ch; res.IsError {
			t.Fatal(text(res))
		}
	})
}

// A request state that was not sealed for this call is not trusted.
func TestForgedRequestStateIsIgnored(t *testing.T) {
	e := newEnv(t, envOpts{})
	cs := e.client(nil, "")
	args := map[string]any{"path": filepath.Join(e.dir, "i.txt"), "text": "x"}
	res := advanceUntil(e, time.Second, e.callAsync(cs, "up__write_note", args))
	id, _ := overseerMeta(res)["approval_id"].(string)
	ctx := context.Background()
	ch := make(chan *mcp.CallToolResult, 1)
	go func() {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__write_note", Arguments: args, RequestState: id + ".forged",
			InputResponses: mcp.InputResponseMap{"overseer_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}})
		if err != nil {
			r = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		ch <- r
	}()
	res = advanceUntil(e, time.Second, ch)
	if !res.IsError {
		t.Fatalf("a forged approval ran the call: %s", text(res))
	}
	apr, err := e.k.Gate.Get(ctx, id)
	if err != nil || apr.Status != store.StatusPending {
		t.Fatalf("the forged answer was recorded: %+v %v", apr, err)
	}
}

func TestCrashedUpstreamIsRestarted(t *testing.T) {
	e := newEnv(t, envOpts{policy: listPolicy})
	cs := e.client(nil, "")
	res := e.call(cs, "up__crash", nil)
	if !res.IsError {
		t.Fatalf("crash: %s", text(res))
	}
	waitFor(t, "the upstream to be unhealthy", func() bool { return e.gw.Health()[0].State == mcpgw.StateUnhealthy })
	// Its tools answer at once with an error; the gateway stays up.
	start := time.Now()
	res = e.call(cs, "up__echo", map[string]any{"message": "x"})
	if !res.IsError || time.Since(start) > 5*time.Second {
		t.Fatalf("echo on a crashed upstream: %s", text(res))
	}
	mustContain(t, text(res), "cannot be called now")
	if !contains(toolNames(t, cs), "up__echo") {
		t.Fatal("the crashed upstream's tools are no longer listed")
	}
	recs, _ := e.k.Store.QueryAudit(context.Background(), store.AuditQuery{Types: []string{mcpgw.TypeUpstream}})
	if len(recs) == 0 || !strings.Contains(string(recs[len(recs)-1].Data), "unhealthy") {
		t.Fatalf("the crash is not audited: %v", recs)
	}
	// After the backoff it is started again.
	healthy := make(chan struct{})
	go func() {
		for e.gw.Health()[0].State != mcpgw.StateHealthy {
			time.Sleep(5 * time.Millisecond)
		}
		close(healthy)
	}()
	advanceUntil(e, 500*time.Millisecond, healthy)
	if h := e.gw.Health()[0]; h.Restarts != 1 {
		t.Fatalf("health %+v", h)
	}
	res = e.call(cs, "up__echo", map[string]any{"message": "back"})
	mustContain(t, text(res), "echo: back")
}

func TestHTTPUpstreamAndGateway(t *testing.T) {
	// A real streamable HTTP upstream that wants a header.
	upSrv := httptest.NewServer(headerCheck("X-Token", "s3cret", mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return mcpgwtest.NewServer() }, nil)))
	t.Cleanup(upSrv.Close) // after the gateway closes (cleanups run last first)
	e := newEnv(t, envOpts{servers: "  web:\n    url: " + upSrv.URL + "\n    headers: {X-Token: s3cret}\n" +
		"  gone:\n    url: http://127.0.0.1:1/mcp\n"})
	health := map[string]mcpgw.State{}
	for _, h := range e.gw.Health() {
		health[h.Name] = h.State
	}
	if health["web"] != mcpgw.StateHealthy || health["gone"] != mcpgw.StateUnhealthy || health["up"] != mcpgw.StateHealthy {
		t.Fatalf("health %v", e.gw.Health())
	}
	// The gateway over streamable HTTP, driven by the SDK's HTTP client.
	gwSrv := httptest.NewServer(e.gw.HTTPHandler())
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: gwSrv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gwSrv.Close)
	t.Cleanup(func() { cs.Close() })
	res := e.call(cs, "web__echo", map[string]any{"message": "over http"})
	mustContain(t, text(res), "echo: over http")
	if overseerMeta(res)["decision"] != "allow" {
		t.Fatalf("meta %v", overseerMeta(res))
	}
}

func TestPromptsResourcesAndNotificationsPassThrough(t *testing.T) {
	e := newEnv(t, envOpts{policy: listPolicy})
	var mu sync.Mutex
	var progress []float64
	var logs []string
	changed := make(chan struct{}, 8)
	cs := e.client(&mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params.Progress)
			mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, r.Params.Logger+": "+r.Params.Data.(string))
			mu.Unlock()
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}, "2025-11-25")
	ctx := context.Background()

	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up__greet", Arguments: map[string]string{"name": "Ann"}})
	if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Ann" {
		t.Fatalf("prompt %+v %v", pr, err)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "note://readme"})
	if err != nil || rr.Contents[0].Text != "read me" {
		t.Fatalf("resource %+v %v", rr, err)
	}

	params := &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{"steps": 3}}
	params.SetProgressToken("tok-1")
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("slow: %v %v", res, err)
	}
	waitFor(t, "progress", func() bool { mu.Lock(); defer mu.Unlock(); return len(progress) == 3 })

	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	e.call(cs, "up__log", map[string]any{"message": "hello log"})
	waitFor(t, "the log message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(logs) == 1 && logs[0] == "up/test: hello log"
	})

	if res := e.call(cs, "up__add_tool", nil); res.IsError {
		t.Fatal(text(res))
	}
	waitFor(t, "the new tool", func() bool {
		select {
		case <-changed:
		default:
		}
		return contains(toolNames(t, cs), "up__dynamic")
	})
}

// hiddenByPolicy is exercised through the listing; this checks its rules
// directly on compiled policies.
func TestHiddenByPolicyRules(t *testing.T) {
	cases := []struct {
		name, rules string
		hidden      bool
	}{
		{"unconditional block", "- {name: a, tool: up__x, level: block}", true},
		{"block by kind", "- {name: a, kind: mcp, level: block}", true},
		{"glob block", "- {name: a, tool: 'up__*', level: block}", true},
		{"earlier allow wins", "- {name: a, tool: up__x, level: auto}\n- {name: b, tool: up__x, level: block}", false},
		{"conditional block", "- {name: a, tool: up__x, when: 'args.n > 1', level: block}", false},
		{"earlier conditional rule", "- {name: a, tool: up__x, when: 'args.n > 1', level: auto}\n- {name: b, tool: up__x, level: block}", false},
		{"agent scoped", "- {name: a, tool: up__x, agent: claude, level: block}", false},
		{"other tool", "- {name: a, tool: up__y, level: block}", false},
		{"approve is not hidden", "- {name: a, tool: up__x, level: approve}", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := policy.Parse("p.yaml", []byte("version: 1\nextends: none\nrules:\n"+indent(c.rules)), policy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := mcpgw.HiddenByPolicy(p.Rules, "up__x", action.KindMCP); got != c.hidden {
				t.Fatalf("hidden %v, want %v", got, c.hidden)
			}
		})
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ") + "\n"
}

// headerCheck refuses requests without the header.
func headerCheck(name, value string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(name) != value {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Reading many different files through one tool is ordinary work: L2's
// counting applies to calls that write, delete, run or send, so the 20th
// read within the window is not put to a person; identical reads repeated
// still are.
func TestLoopLimitsCountEffectsOnly(t *testing.T) {
	e := newEnv(t, envOpts{})
	cs := e.client(nil, "")
	for i := 0; i < 30; i++ {
		p := filepath.Join(e.cwd, fmt.Sprintf("f%02d.txt", i))
		if err := os.WriteFile(p, []byte(fmt.Sprint("note ", i)), 0o600); err != nil {
			t.Fatal(err)
		}
		if res := e.call(cs, "up__read_note", map[string]any{"path": p}); res.IsError || !strings.Contains(text(res), fmt.Sprint("note ", i)) {
			t.Fatalf("read %d: %s", i, text(res))
		}
	}
	// f00.txt was read once above: the third identical read is asked.
	e.call(cs, "up__read_note", map[string]any{"path": filepath.Join(e.cwd, "f00.txt")})
	ch := e.callAsync(cs, "up__read_note", map[string]any{"path": filepath.Join(e.cwd, "f00.txt")})
	aps := e.pending(1)
	if aps[0].Verdict.Decider == nil || aps[0].Verdict.Decider.Name != "same-args" {
		t.Fatalf("the third identical read: %+v", aps[0].Verdict.Decider)
	}
	e.answer(aps[0].ID, "approve", "")
	<-ch
}

// TestNotForwardedWhenTheRecordFails: a call whose action and verdict
// cannot be recorded is refused, and never reaches the server (fail
// closed: nothing runs unaudited).
func TestNotForwardedWhenTheRecordFails(t *testing.T) {
	e := newEnv(t, envOpts{policy: "version: 1\nrules:\n  - name: notes\n    tool: [up__write_note]\n    level: auto\n"})
	cs := e.client(nil, "")
	ran := filepath.Join(e.dir, "ran.txt")
	if res := e.call(cs, "up__write_note", map[string]any{"path": ran, "text": "x"}); res.IsError {
		t.Fatalf("with the audit log working: %s", text(res))
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the call did not run with the audit log working: %v", err)
	}
	if err := e.k.Audit.Close(); err != nil {
		t.Fatal(err)
	}
	never := filepath.Join(e.dir, "never.txt")
	res := e.call(cs, "up__write_note", map[string]any{"path": never, "text": "x"})
	if !res.IsError || !strings.Contains(text(res), "could not record") {
		t.Fatalf("a call that could not be recorded: %+v %s", res, text(res))
	}
	if _, err := os.Stat(never); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a call that could not be recorded reached the server: %v", err)
	}
}

// TestResultSharesTheNextCallsCommit: the result of a call is recorded
// in the same commit as a later call's action and verdict (the records of
// one commit carry its one time stamp, in sequence), not in a commit and
// a sync of its own. On a machine too slow for every pair of calls to
// come within the result's wait, one of several suffices.
func TestResultSharesTheNextCallsCommit(t *testing.T) {
	e := newEnv(t, envOpts{realClock: true})
	cs := e.client(nil, "")
	ctx := context.Background()
	var ids []string
	for i := 0; i < 8; i++ {
		ids = append(ids, overseerMeta(e.call(cs, "up__echo", map[string]any{"message": fmt.Sprint("m", i)}))["action_id"].(string))
	}
	for _, id := range ids {
		e.wantAudit(id, "action,verdict,result")
	}
	all, err := e.k.Store.QueryAudit(ctx, store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for i, r := range all {
		if r.Type == "result" && i+1 < len(all) && all[i+1].Type == "action" && all[i+1].Time.Equal(r.Time) {
			shared++
		}
	}
	if shared == 0 {
		t.Fatalf("no call's result was committed with a later call's action: %d records", len(all))
	}
	t.Logf("%d of %d results shared a later call's commit", shared, len(ids)-1)
}

// A mapped argument is what the guards judge: an agent cannot put a
// harmless value under a name the guards read (command, sql) next to the
// one the server runs (cmd), where the tool's schema lets extra arguments
// through. Such a call is refused; the same value under both names, or the
// mapped argument alone, is judged and runs.
func TestMappedArgumentCannotBeShadowed(t *testing.T) {
	cases := []struct {
		kind, evil, decoy, harmless string
	}{
		{"shell", "rm -rf ~/projects", "command", "echo hello"},
		// The SQL guard reads "sql" before "query", where the mapped
		// argument was copied.
		{"sql", "DROP TABLE users", "sql", "SELECT 1"},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			e := newEnv(t, envOpts{tools: "      exec: {kind: " + c.kind + ", arg: cmd}\n"})
			cs := e.client(nil, "")
			res := e.call(cs, "up__exec", map[string]any{"cmd": c.evil, c.decoy: c.harmless})
			if !res.IsError || strings.Contains(text(res), "would run") {
				t.Fatalf("shadowed call: %s", text(res))
			}
			mustContain(t, text(res), "cmd")
			for _, args := range []map[string]any{
				{"cmd": c.harmless},
				{"cmd": c.harmless, c.decoy: c.harmless},
			} {
				res := e.call(cs, "up__exec", args)
				if res.IsError || !strings.Contains(text(res), "would run: "+c.harmless) {
					t.Fatalf("%v: %s", args, text(res))
				}
			}
		})
	}
}

// Reading a resource is judged like reading a file when its URI names one
// (file://): a server's file template would otherwise let the client read
// Overseer's own files or a key, unjudged and unrecorded. A read the
// firewall lets through runs at once; one that needs a person waits for
// the answer; the server's other resources are read as before.
func TestFileResourceReadsAreJudged(t *testing.T) {
	e := newEnv(t, envOpts{})
	cs := e.client(nil, "")
	ctx := context.Background()
	seal := filepath.Join(e.k.Home, "audit.seal")
	if _, err := os.Stat(seal); err != nil {
		t.Fatal(err)
	}
	if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file://" + seal}); err == nil {
		t.Fatalf("read Overseer's sealing key: %d bytes", len(rr.Contents[0].Text))
	}
	notes := filepath.Join(e.cwd, "notes.txt")
	if err := os.WriteFile(notes, []byte("buy milk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file://" + notes}); err != nil || rr.Contents[0].Text != "buy milk" {
		t.Fatalf("a plain file: %+v %v", rr, err)
	}
	if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "note://readme"}); err != nil || rr.Contents[0].Text != "read me" {
		t.Fatalf("a listed resource: %+v %v", rr, err)
	}
	// A secret waits for a person, and is read once approved.
	env := filepath.Join(e.cwd, ".env")
	if err := os.WriteFile(env, []byte("API_KEY=s3cr3t-value-1234567890"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file://" + env})
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- rr.Contents[0].Text
	}()
	aps := e.pending(1)
	select {
	case s := <-got:
		t.Fatalf("read before a person answered: %q", s)
	default:
	}
	e.answer(aps[0].ID, "approve", "")
	if s := <-got; !strings.Contains(s, "API_KEY") {
		t.Fatalf("after the approval: %q", s)
	}
	recs, err := e.k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeAction}})
	if err != nil {
		t.Fatal(err)
	}
	judged := 0
	for _, r := range recs {
		if strings.Contains(string(r.Data), "audit.seal") || strings.Contains(string(r.Data), "notes.txt") ||
			strings.Contains(string(r.Data), ".env") {
			judged++
		}
	}
	if judged != 3 {
		t.Fatalf("%d file reads recorded, want 3", judged)
	}
}
