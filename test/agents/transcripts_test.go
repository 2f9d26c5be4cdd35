package agents

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// updateTranscripts copies the transcripts the real CLIs write in these
// tests, with this machine's paths replaced by $PROJ, $HOME and $TMPDIR,
// into the ingest parsers' testdata.
var updateTranscripts = flag.Bool("update-transcripts", false, "write the recorded transcripts to internal/frontend/ingest/testdata")

// The sessions the transcript tests record. Each makes the calls ingest
// must find: a read, a file created and then edited (both undoable from the
// transcript), harmless shell commands, a sub-agent's call (Claude Code)
// and one planted violation (a write to a shell start-up file).
var (
	claudeMain = []modeltest.ToolCall{
		{Name: "Read", Input: map[string]any{"file_path": "$PROJ/README.md"}},
		{Name: "Write", Input: map[string]any{"file_path": "$PROJ/app.txt", "content": "line one\nline two\n"}},
		{Name: "Edit", Input: map[string]any{"file_path": "$PROJ/app.txt", "old_string": "line two", "new_string": "line 2"}},
		{Name: "Bash", Input: map[string]any{"command": "echo hello-ingest", "description": "say hello"}},
		{Name: "Agent", Input: map[string]any{"description": "look around", "prompt": "SUBTASK list the files", "subagent_type": "general-purpose"}},
		{Name: "Bash", Input: map[string]any{"command": "echo 'alias ls=evil' >> ~/.bashrc", "description": "planted violation"}},
	}
	claudeSub = []modeltest.ToolCall{
		{Name: "Bash", Input: map[string]any{"command": "ls -la", "description": "list"}},
	}
	codexCalls = []modeltest.ToolCall{
		{Name: "exec_command", Input: map[string]any{"cmd": "echo hello-codex"}},
		{Name: "exec_command", Input: map[string]any{"cmd": "echo data > notes.txt"}},
		{Name: "exec_command", Input: map[string]any{"cmd": "echo 'alias ls=evil' >> ~/.bashrc"}},
	}
)

// expand puts the env's project directory into a script's inputs.
func (e *env) expand(calls []modeltest.ToolCall) []modeltest.ToolCall {
	out := make([]modeltest.ToolCall, len(calls))
	for i, c := range calls {
		in := map[string]any{}
		for k, v := range c.Input {
			if s, ok := v.(string); ok {
				v = strings.ReplaceAll(s, "$PROJ", e.proj)
			}
			in[k] = v
		}
		out[i] = modeltest.ToolCall{Name: c.Name, Input: in, Freeform: strings.ReplaceAll(c.Freeform, "$PROJ", e.proj)}
	}
	return out
}

// recordClaude runs Claude Code without any hook through the scripted
// session and returns the transcript files it wrote.
func (e *env) recordClaude(t *testing.T, bin string) []string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.proj, "README.md"), []byte("# demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	main, sub := modeltest.Steps(e.expand(claudeMain)...), modeltest.Steps(e.expand(claudeSub)...)
	script := func(r *modeltest.Request) modeltest.Reply {
		if strings.Contains(r.Text(), "SUBTASK") {
			return sub(r)
		}
		return main(r)
	}
	_, srv, out := e.claude(t, bin, script, "--permission-mode", "bypassPermissions")
	if n := len(srv.Results()); n != len(claudeMain)+len(claudeSub) {
		t.Fatalf("%d tool results, want %d\n%s", n, len(claudeMain)+len(claudeSub), out)
	}
	return e.transcripts(t, filepath.Join(e.userHome, ".claude", "projects"))
}

// recordCodex runs Codex without any hook through the scripted session.
func (e *env) recordCodex(t *testing.T, bin string) []string {
	t.Helper()
	codexHome := e.codexHome(t)
	srv, out := e.codex(t, bin, codexHome, modeltest.Steps(e.expand(codexCalls)...))
	if n := len(srv.Results()); n != len(codexCalls) {
		t.Fatalf("%d tool results, want %d\n%s", n, len(codexCalls), out)
	}
	return e.transcripts(t, filepath.Join(codexHome, "sessions"))
}

// transcripts lists the .jsonl files under dir.
func (e *env) transcripts(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts under %s: %v", dir, err)
	}
	sort.Strings(files)
	return files
}

// saveFixtures writes the transcripts, scrubbed of this machine's paths,
// as testdata/<name>-<n>.jsonl of the ingest package.
func (e *env) saveFixtures(t *testing.T, name string, files []string) {
	t.Helper()
	dir := filepath.Join("..", "..", "internal", "frontend", "ingest", "testdata")
	slug := strings.NewReplacer("/", "-", ".", "-").Replace(e.proj)
	repl := strings.NewReplacer(e.proj, "$PROJ", slug, "-PROJ", e.userHome, "$HOME", os.TempDir()+"/", "$TMPDIR/")
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, line := range strings.SplitAfter(string(b), "\n") {
			// The system prompt's snapshots and the request shapes are
			// the bulk of a transcript and say nothing ingest reads.
			if len(line) > 16<<10 && (strings.Contains(line[:200], `"api-request`) || strings.Contains(line, `"prompt_snapshot"`)) {
				continue
			}
			kept = append(kept, line)
		}
		out := repl.Replace(strings.Join(kept, ""))
		root, _ := filepath.Abs(filepath.Join("..", ".."))
		for _, bad := range []string{root, filepath.Dir(e.proj), os.TempDir() + "/"} {
			if strings.Contains(out, bad) {
				t.Fatalf("%s still holds a path of this machine (%s)", f, bad)
			}
		}
		name := name + "-" + string(rune('a'+i)) + ".jsonl"
		if strings.Contains(f, string(filepath.Separator)+"subagents"+string(filepath.Separator)) {
			name = "claude-code-subagent.jsonl"
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecordTranscripts(t *testing.T) {
	if !*updateTranscripts {
		t.Skip("only with -update-transcripts")
	}
	t.Run("claude-code", func(t *testing.T) {
		e := newEnv(t, false)
		e.saveFixtures(t, "claude-code", e.recordClaude(t, findCLI(t, "claude")))
	})
	t.Run("codex", func(t *testing.T) {
		e := newEnv(t, false)
		e.saveFixtures(t, "codex", e.recordCodex(t, findCLI(t, "codex")))
	})
	t.Run("codex-patch", func(t *testing.T) {
		e := newEnv(t, false)
		e.saveFixtures(t, "codex-patch", e.recordCodexPatch(t, findCLI(t, "codex")))
	})
}

// webhookReceiver is a real local HTTP receiver of Overseer's webhook
// channel; it keeps the bodies it got.
type webhookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	r := &webhookReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var m map[string]any
		if err := json.NewDecoder(req.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, m)
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *webhookReceiver) alerts(name string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, b := range r.bodies {
		if b["alert"] == name {
			out = append(out, b)
		}
	}
	return out
}

// ingestReport is the part of `overseer audit ingest --json` checked here.
type ingestReport struct {
	Calls, New, Duplicates, Results int
	Levels                          map[string]int
	Violations                      []struct {
		ActionID, Agent, Tool, Source string
	}
	Undoable []struct {
		ActionID string `json:"action_id"`
		Path     string
	}
	Problems []any
}

// TestAuditIngest runs the real Claude Code and Codex without Overseer in
// the path, then audits their transcripts after the fact.
func TestAuditIngest(t *testing.T) {
	claude, codex := findCLI(t, "claude"), findCLI(t, "codex")
	overseertest.Binary(t) // built before the commands' deadlines start
	e := newEnv(t, false)
	recv := newWebhookReceiver(t)
	if err := os.WriteFile(filepath.Join(e.home, "notify.yaml"), []byte("channels:\n  - type: webhook\n    url: "+recv.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.recordClaude(t, claude)
	e.recordCodex(t, codex)
	dirs := []string{filepath.Join(e.userHome, ".claude", "projects"), filepath.Join(e.userHome, ".codex", "sessions")}

	ingest := func() ingestReport {
		t.Helper()
		r := e.overseer(t, append([]string{"audit", "ingest", "--json"}, dirs...)...)
		var rep ingestReport
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &rep) != nil {
			t.Fatalf("ingest: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		return rep
	}
	rep := ingest()
	calls := len(claudeMain) + len(claudeSub) + len(codexCalls)
	if rep.Calls != calls || rep.New != calls || rep.Results != calls || len(rep.Problems) != 0 {
		t.Fatalf("report %+v, want %d calls, all new, each with its result", rep, calls)
	}
	// Every call is an ingested record with the verdict the firewall gives
	// it live; the two planted violations are blocked.
	records := map[string]int{}
	for _, r := range e.audit(t) {
		records[r.Type]++
		if r.Type == "ingested" && !strings.Contains(string(r.Data), `"ingested":true`) {
			t.Errorf("record %d is not marked as ingested", r.Seq)
		}
		if r.Type == "action" || r.Type == "verdict" {
			t.Errorf("an ingested call was recorded as a live %s", r.Type)
		}
	}
	if records["ingested"] != calls {
		t.Fatalf("%d ingested records, want %d", records["ingested"], calls)
	}
	if len(rep.Violations) != 2 || rep.Levels["block"] != 2 {
		t.Fatalf("violations %+v levels %v", rep.Violations, rep.Levels)
	}
	for _, v := range rep.Violations {
		if v.Tool != "Bash" && v.Tool != "exec_command" || !strings.Contains(v.Source, ".jsonl:") {
			t.Errorf("violation %+v", v)
		}
	}
	if got := recv.alerts("ingest_violation"); len(got) != 2 {
		t.Fatalf("the webhook received %d violation alerts, want 2: %v", len(got), recv.bodies)
	}

	// Ingesting again adds nothing.
	before := len(e.audit(t))
	if again := ingest(); again.New != 0 || again.Duplicates != calls || again.Results != 0 {
		t.Fatalf("second ingest %+v", again)
	}
	if n := len(e.audit(t)); n != before {
		t.Fatalf("the second ingest wrote %d records", n-before)
	}

	// The edit is rolled back on request; the write it followed then too.
	app := filepath.Join(e.proj, "app.txt")
	if len(rep.Undoable) != 2 {
		t.Fatalf("undoable %+v", rep.Undoable)
	}
	edit, write := rep.Undoable[1].ActionID, rep.Undoable[0].ActionID
	if r := e.overseer(t, "audit", "rollback", write, "--yes"); r.Code == 0 {
		t.Fatalf("rolled back the write under the edit that followed it: %s", r.Stdout)
	}
	if r := e.overseer(t, "audit", "rollback", edit, "--yes"); r.Code != 0 {
		t.Fatalf("rollback: %s %s", r.Stdout, r.Stderr)
	}
	if b, _ := os.ReadFile(app); string(b) != "line one\nline two\n" {
		t.Fatalf("app.txt is %q after the rollback", b)
	}
	if r := e.overseer(t, "audit", "rollback", write, "--yes"); r.Code != 0 {
		t.Fatalf("rollback of the write: %s %s", r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(app); !os.IsNotExist(err) {
		t.Fatalf("app.txt, which the agent created, is still there: %v", err)
	}

	// The record shows it all; a person promotes the agent, and the
	// promotion is audited.
	r := e.overseer(t, "agent", "show", "codex", "--json")
	var rec struct {
		Ingested   int
		Violations []any
		Proposal   struct{ Tools, Excluded []string }
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &rec) != nil || rec.Ingested != 3 || len(rec.Violations) != 1 {
		t.Fatalf("agent show: %s %s", r.Stdout, r.Stderr)
	}
	if r := e.overseer(t, "agent", "promote", "codex", "--to", "delegated"); r.Code == 0 {
		t.Fatalf("promoted with a violation on record: %s", r.Stdout)
	}
	if r := e.overseer(t, "agent", "promote", "claude-code", "--to", "delegated", "--accept-violations", "--reason", "reviewed"); r.Code != 0 {
		t.Fatalf("promote: %s %s", r.Stdout, r.Stderr)
	}
	if n := strings.Count(e.overseer(t, "audit", "export").Stdout, `"type":"trust"`); n != 1 {
		t.Fatalf("%d trust records", n)
	}
}

// TestAuditIngestFollow: an agent with no hook is audited within seconds
// while it works.
func TestAuditIngestFollow(t *testing.T) {
	claude := findCLI(t, "claude")
	e := newEnv(t, false)
	dir := filepath.Join(e.userHome, ".claude", "projects")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, overseertest.Binary(t), "--home", e.home, "audit", "ingest", "--follow", "--json", dir)
	cmd.Env = append(os.Environ(), "OVERSEER_HOME="+e.home, "OVERSEER_INGEST_RESCAN=500ms")
	var out overseertest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	start := time.Now()
	e.recordClaude(t, claude)
	ran := time.Now()
	want := len(claudeMain) + len(claudeSub)
	for {
		n := 0
		for _, r := range e.audit(t) {
			if r.Type == "ingested" {
				n++
			}
		}
		if n == want {
			break
		}
		if time.Since(ran) > 10*time.Second {
			t.Fatalf("%d of %d calls ingested 10s after the agent ended\n%s", n, want, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("audited %s after the agent ended (its run took %s)", time.Since(ran).Round(time.Millisecond), ran.Sub(start).Round(time.Millisecond))
}
