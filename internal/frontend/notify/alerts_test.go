package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/store"
)

func rec(typ string, data any) store.AuditRecord {
	b, _ := json.Marshal(data)
	return store.AuditRecord{Type: typ, Tool: "WebFetch", Agent: "claude-code", Session: "s-1", Data: b}
}

func TestAlertOf(t *testing.T) {
	egress := action.Verdict{Level: action.Block, Reasons: []action.Reason{{Name: "egress.secret", Level: action.Block,
		Message: "curl sends a secret to x.example: github-pat ghp_…(40 chars)"}}}
	asked := egress
	asked.Level = action.Approve
	other := action.Verdict{Level: action.Block, Reasons: []action.Reason{{Name: "shell.rm-root", Level: action.Block}}}
	for _, tt := range []struct {
		name string
		rec  store.AuditRecord
		want string // "" for none
		in   string // in the title
	}{
		{"injection", rec(audit.TypeAlert, map[string]any{"kind": "result", "summary": "tool result: possible prompt injection",
			"findings": map[string]any{"injection": map[string]any{"score": 5}}}), AlertInjection, "prompt injection in a tool result (WebFetch)"},
		{"secret in a result", rec(audit.TypeAlert, map[string]any{"kind": "result", "summary": "tool result: 1 secret(s)",
			"findings": map[string]any{"secrets": []any{map[string]any{"kind": "github-pat"}}}}), AlertResultSecret, "a secret in a tool result"},
		{"unscanned", rec(audit.TypeAlert, map[string]any{"kind": "result", "findings": map[string]any{"unscanned": "too big"}}), AlertResultUnknown, "could not scan"},
		{"rug pull", rec(audit.TypeAlert, map[string]any{"kind": "mcp_definition", "server": "up", "tool": "fact",
			"detail": map[string]any{"pending": map[string]any{"reason": "changed"}}}), AlertRugPull, "changed: tool fact of server up"},
		{"poisoned prompt", rec(audit.TypeAlert, map[string]any{"kind": "mcp_definition", "server": "up", "tool": "greet",
			"detail": map[string]any{"kind": "prompt", "pending": map[string]any{"reason": "poisoned"}}}), AlertPoisonedTool, "suspicious MCP definition: prompt greet"},
		{"flagged", rec(audit.TypeAlert, map[string]any{"kind": "mcp_definition", "server": "up", "tool": "t",
			"detail": map[string]any{"flagged": map[string]any{"score": 4}}}), AlertPoisonedTool, "tool t"},
		{"blocked secret", rec(audit.TypeVerdict, egress), AlertSecretEgress, "tried to send a secret (blocked)"},
		{"asked secret: the request itself is the message", rec(audit.TypeVerdict, asked), "", ""},
		{"another block", rec(audit.TypeVerdict, other), "", ""},
		{"an action", rec(audit.TypeAction, map[string]any{}), "", ""},
		{"bad data", store.AuditRecord{Type: audit.TypeAlert, Data: json.RawMessage(`[`)}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := AlertOf(tt.rec)
			if tt.want == "" {
				if ok {
					t.Fatalf("an alert: %+v", m)
				}
				return
			}
			if !ok || m.Alert != tt.want || !m.Security || !strings.Contains(m.Title, tt.in) || m.Agent != "claude-code" {
				t.Fatalf("%+v", m)
			}
		})
	}
}

// FollowAlerts delivers each alert of the records after the start once, to
// a real webhook receiver; past the cap, one message counts the rest.
func TestFollowAlerts(t *testing.T) {
	var mu sync.Mutex
	var events, names []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p WebhookPayload
		json.NewDecoder(r.Body).Decode(&p)
		mu.Lock()
		events = append(events, r.Header.Get("X-Overseer-Event"))
		names = append(names, p.Message.Alert)
		mu.Unlock()
	}))
	defer hook.Close()
	n, err := New(&Config{Channels: []ChannelConfig{{Type: TypeWebhook, Name: "hook", URL: hook.URL}}}, Options{Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	inj := rec(audit.TypeAlert, map[string]any{"kind": "result", "findings": map[string]any{"injection": map[string]any{"score": 5}}})
	var log []store.AuditRecord
	for i := range 14 {
		r := inj
		if i%2 == 1 {
			r = rec(audit.TypeAction, map[string]any{})
		}
		r.Seq = int64(i + 1)
		log = append(log, r)
	}
	for i := range 12 {
		r := inj
		r.Seq = int64(100 + i)
		log = append(log, r)
	}
	read := func(_ context.Context, after int64) ([]store.AuditRecord, error) {
		var out []store.AuditRecord
		for _, r := range log {
			if r.Seq > after {
				out = append(out, r)
			}
		}
		return out, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.FollowAlerts(ctx, read, 2, func(*Message) string { return "http://console/ui/#/audit" })
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		k := len(names)
		mu.Unlock()
		if k >= 11 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // nothing more comes
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	// One read: records 3..13 hold 6 alerts (odd sequence numbers), then
	// 12 more: 10 are sent, and one message counts the other 8.
	if len(names) != 10+1 || names[len(names)-1] != "alerts_skipped" {
		t.Fatalf("%d deliveries: %v", len(names), names)
	}
	for _, e := range events {
		if e != "alert" {
			t.Fatalf("events %v", events)
		}
	}
}
