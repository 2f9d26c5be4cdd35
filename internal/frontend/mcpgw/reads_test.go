package mcpgw_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/frontend/mcpgw/mcpgwtest"
	"github.com/overseer-dev/overseer/internal/store"
)

// TestPromptAndResourceReadsAreJudged: prompts/get and resources/read of
// URIs other than file:// went to the server unjudged and unrecorded. A
// prompt is judged by its arguments as a tool call is (a path names a
// file the server may read: Overseer's token is blocked, a key reaches a
// person), an http(s) resource as a fetch by the network guards (the cloud
// metadata address is refused), another scheme as a read of the server's
// own data (and of the file its path names, when one is there); ordinary
// prompts and resources are read at once, and every one is recorded.
func TestPromptAndResourceReadsAreJudged(t *testing.T) {
	t.Setenv(mcpgwtest.EnvReaders, "1")
	e := newEnv(t, envOpts{})
	cs := e.client(nil, "")
	ctx := context.Background()
	token := filepath.Join(e.k.Home, "token")
	if err := os.WriteFile(token, []byte("tok-0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(e.cwd, "notes.txt")
	if err := os.WriteFile(notes, []byte("buy milk"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := func(r *mcp.GetPromptResult) string {
		var sb strings.Builder
		for _, m := range r.Messages {
			if tc, ok := m.Content.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		return sb.String()
	}

	// Attacks: each refused before the server sees it.
	if r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up__readfile", Arguments: map[string]string{"path": token}}); err == nil {
		t.Fatalf("a prompt read Overseer's token: %q", text(r))
	}
	if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "http://169.254.169.254/latest/meta-data/iam/security-credentials/"}); err == nil {
		t.Fatalf("a resource fetched the cloud metadata address: %+v", r.Contents[0].Text)
	}
	if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes:///" + strings.TrimPrefix(token, "/")}); err == nil {
		t.Fatalf("a notes:// resource read Overseer's token: %q", r.Contents[0].Text)
	}
	// The file in the query of a template of the server's own scheme
	// (read without a person before: only the URI's path was judged).
	if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://read?path=" + url.QueryEscape(token)}); err == nil {
		t.Fatalf("a notes://read?path= resource read Overseer's token: %q", r.Contents[0].Text)
	}
	// The token among more arguments than are judged: refused whole.
	many := map[string]string{"path": token}
	for i := 0; i < 300; i++ {
		many["x"+strings.Repeat("y", i)] = notes
	}
	if r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up__readfile", Arguments: many}); err == nil {
		t.Fatalf("a prompt with many arguments read Overseer's token: %q", text(r))
	}
	if len(e.pendingNow()) != 0 {
		t.Fatalf("a blocked read opened an approval")
	}

	// Harmless twins: read at once, no person.
	if r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up__greet", Arguments: map[string]string{"name": "Ann"}}); err != nil || text(r) != "Hello, Ann" {
		t.Fatalf("an ordinary prompt: %v %v", r, err)
	}
	if r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up__readfile", Arguments: map[string]string{"path": notes}}); err != nil || !strings.Contains(text(r), "buy milk") {
		t.Fatalf("a prompt quoting a project file: %v %v", r, err)
	}
	if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "https://docs.example.com/guide"}); err != nil || r.Contents[0].Text != "page https://docs.example.com/guide" {
		t.Fatalf("a public page: %+v %v", r, err)
	}
	if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "note://readme"}); err != nil || r.Contents[0].Text != "read me" {
		t.Fatalf("a listed resource: %+v %v", r, err)
	}
	if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes:///" + strings.TrimPrefix(notes, "/")}); err != nil || r.Contents[0].Text != "buy milk" {
		t.Fatalf("a notes:// resource of a project file: %+v %v", r, err)
	}
	if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://read?path=" + url.QueryEscape(notes)}); err != nil || r.Contents[0].Text != "buy milk" {
		t.Fatalf("a notes://read?path= resource of a project file: %+v %v", r, err)
	}
	if n := len(e.pendingNow()); n != 0 {
		t.Fatalf("%d ordinary reads reached a person", n)
	}

	// A key file named in a prompt's argument waits for a person (last:
	// after it, the egress guard puts this session's sends to a person).
	sshDir := filepath.Join(e.dir, ".ssh")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(sshDir, "id_rsa")
	if err := os.WriteFile(key, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up__readfile", Arguments: map[string]string{"path": key}})
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- text(r)
	}()
	aps := e.pending(1)
	select {
	case s := <-got:
		t.Fatalf("the key was read before a person answered: %q", s)
	default:
	}
	e.answer(aps[0].ID, "deny", "no")
	if s := <-got; !strings.HasPrefix(s, "error:") || strings.Contains(s, "PRIVATE KEY") {
		t.Fatalf("after the refusal: %q", s)
	}

	// Every one is recorded.
	recs, err := e.k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeAction}})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, r := range recs {
		all.Write(r.Data)
	}
	for _, want := range []string{"169.254.169.254", "docs.example.com", "note://readme", "Ann", "notes.txt", "id_rsa"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("no action recorded for %s", want)
		}
	}
}

// pendingNow returns the approvals waiting now.
func (e *env) pendingNow() []*store.Approval {
	e.t.Helper()
	aps, err := e.k.Gate.Pending(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return aps
}
