package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// The audit log keeps what was asked whole, a token in a command too, and
// `audit export` and `audit tail` are commands an agent may run: under an
// agent they mask the secrets they print, so that the records of other
// sessions are no way to read a secret unasked. A person's export is whole.
func TestAuditExportMasksSecretsUnderAgent(t *testing.T) {
	const secret = "ghp_C3N8FeKjFTrKCb0Tz8BbwTKx8EqwtHmcOJEZ"
	e := newCLIEnv(t)
	ctx := context.Background()
	event := `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","cwd":` + jsonString(e.proj) +
		`,"tool_input":{"command":"curl -H \"Authorization: Bearer ` + secret + `\" https://api.github.com/user"}}`
	var out, errb bytes.Buffer
	Main(ctx, []string{"--home", e.home, "hook", "claude-code"}, strings.NewReader(event), &out, &errb)
	if code, o, _ := e.run(t, ctx, "audit", "export"); code != 0 || !strings.Contains(o, secret) {
		t.Fatalf("a person's export: %d, secret there %v", code, strings.Contains(o, secret))
	}

	old := agentCheck
	t.Cleanup(func() { agentCheck = old })
	agentCheck = func() (AgentEvidence, bool) {
		return AgentEvidence{Agent: "Claude Code", Why: "CLAUDECODE=1 in the environment"}, true
	}
	code, o, stderr := e.run(t, ctx, "audit", "export")
	if code != 0 || strings.Contains(o, secret) || !strings.Contains(o, "ghp_") || !strings.Contains(stderr, "masked") {
		t.Fatalf("export under an agent: %d %q\n%s", code, stderr, o)
	}
	for _, args := range [][]string{{"audit", "tail", "-n", "100", "--json"}, {"audit", "tail", "-n", "100"}} {
		tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, o, _ := e.run(t, tctx, args...)
		cancel()
		if strings.Contains(o, secret) || o == "" {
			t.Fatalf("%v under an agent:\n%s", args, o)
		}
	}
}

// The same holds for the other commands an agent may run that show
// other sessions' calls: the requests waiting for a person.
func TestApprovalsMaskSecretsUnderAgent(t *testing.T) {
	const secret = "ghp_C3N8FeKjFTrKCb0Tz8BbwTKx8EqwtHmcOJEZ"
	e := newCLIEnv(t)
	ctx := context.Background()
	k, err := kernel.Open(ctx, kernel.Config{Home: e.home})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := k.Submit(ctx, &action.Action{Tool: "Bash", Kind: action.KindShell, Agent: "other", Session: "s2", Cwd: e.proj,
		Args: map[string]any{"command": "curl -H 'Authorization: Bearer " + secret + "' https://api.github.com/user"}})
	if err != nil || sub.Approval == nil {
		t.Fatalf("%+v %v", sub, err)
	}
	k.Close()
	for _, args := range [][]string{{"approvals"}, {"approvals", "--json"}} {
		if code, o, _ := e.run(t, ctx, args...); code != 0 || !strings.Contains(o, secret) {
			t.Fatalf("%v for a person: %d\n%s", args, code, o)
		}
	}
	old := agentCheck
	t.Cleanup(func() { agentCheck = old })
	agentCheck = func() (AgentEvidence, bool) {
		return AgentEvidence{Agent: "Claude Code", Why: "CLAUDECODE=1 in the environment"}, true
	}
	for _, args := range [][]string{{"approvals"}, {"approvals", "--json"}} {
		code, o, _ := e.run(t, ctx, args...)
		if code != 0 || strings.Contains(o, secret) || !strings.Contains(o, sub.Approval.ID) {
			t.Fatalf("%v under an agent: %d\n%s", args, code, o)
		}
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
