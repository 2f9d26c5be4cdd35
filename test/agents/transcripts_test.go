package agents

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

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
		out[i] = modeltest.ToolCall{Name: c.Name, Input: in}
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
	codexHome := filepath.Join(e.userHome, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
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
		for _, bad := range []string{"/work/", "/tmp/"} {
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
}
