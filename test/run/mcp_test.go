package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/llmtest"
	"github.com/overseer-dev/overseer/internal/overseertest"
)

// TestMCPToolsInTheLoop: the servers of mcp.yaml are tools of the
// supervised mode, judged like any other: a mapped write inside the
// working directory runs, a mapped write outside it waits for a person who
// refuses, and an unmapped tool (kind mcp) asks a person too.
func TestMCPToolsInTheLoop(t *testing.T) {
	npm := overseertest.MCPPeers(t, "server-filesystem")
	e := newEnv(t)
	outside := t.TempDir()
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	cfg := "servers:\n" +
		"  fs:\n" +
		"    command: node\n" +
		"    args: [" + q(filepath.Join(npm, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")) +
		", " + q(e.work) + ", " + q(outside) + "]\n" +
		"    ping: 30s\n" +
		"    tools:\n" +
		"      write_file: {kind: file_write, arg: path}\n" +
		"      read_text_file: {kind: file_read, arg: path}\n"
	if err := os.WriteFile(filepath.Join(e.home, "mcp.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(e.work, "from-mcp.txt")
	blocked := filepath.Join(outside, "nope.txt")
	srv := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			if r, ok := expect(t, n, req, "fs__write_file", "fs__read_text_file", "file_read"); !ok {
				return r
			}
			return decision("", toolCall("fs__read_text_file", map[string]any{"path": filepath.Join(e.work, "notes.txt")}, "read the notes"))
		case 1:
			if r, ok := expect(t, n, req, "alpha beta gamma"); !ok {
				return r
			}
			return decision("", toolCall("fs__write_file", map[string]any{"path": inside, "content": "via mcp"}, "write the copy"))
		case 2:
			return decision("", toolCall("fs__write_file", map[string]any{"path": blocked, "content": "x"}, "write outside"))
		case 3:
			if r, ok := expect(t, n, req, "the person refused fs__write_file", "not outside"); !ok {
				return r
			}
			return decision("", toolCall("fs__list_allowed_directories", map[string]any{}, "see the allowed directories"))
		case 4:
			return decision("", done("copied the notes through MCP"))
		}
		return llmtest.Fail("request %d was not expected", n)
	}))
	p := e.start("run", "--no-plan", "--model", "openai:test-model@"+srv.URL, "Copy the notes with the MCP tools")
	e.answer("deny", e.awaitApproval(p, "fs__write_file"), "--reason", "not outside the project")
	// fs__list_allowed_directories, without annotations, is named as a tool
	// that only reads: it runs unasked (notify).
	e.answer("approve", e.awaitApproval(p, "overseer.confirm_done"))
	if code := p.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out.String())
	}
	if b, err := os.ReadFile(inside); err != nil || string(b) != "via mcp" {
		t.Fatalf("the MCP write did not happen: %q %v\n%s", b, err, p.out.String())
	}
	if _, err := os.Stat(blocked); err == nil {
		t.Fatal("the refused MCP write happened")
	}
	var outcomes []string
	for _, s := range e.tasks()[0].Steps {
		outcomes = append(outcomes, s.Tool+":"+s.Outcome)
	}
	want := "fs__read_text_file:ran,fs__write_file:ran,fs__write_file:denied,fs__list_allowed_directories:ran,:asked"
	if got := strings.Join(outcomes, ","); got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
}
