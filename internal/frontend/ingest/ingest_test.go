package ingest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parseFile(t *testing.T, format, name string) *Parsed {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewParser(format, name)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(p, name, bytes.NewReader(b), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.Offset != int64(len(b)) {
		t.Errorf("offset %d, want %d", got.Offset, len(b))
	}
	return got
}

type callSum struct{ tool, arg, sub string }

func calls(p *Parsed) (cs []callSum, results map[string]*Result) {
	results = map[string]*Result{}
	for _, e := range p.Events {
		if c := e.Call; c != nil {
			arg := ""
			for _, k := range []string{"command", "cmd", "file_path", "prompt"} {
				if s, ok := c.Input[k].(string); ok {
					arg = s
					break
				}
			}
			cs = append(cs, callSum{c.Tool, arg, c.Origin.SubAgent})
		}
		if r := e.Result; r != nil {
			results[r.CallKey()] = r
		}
	}
	return cs, results
}

// The fixtures are transcripts the real CLIs wrote (test/agents
// TestRecordTranscripts, with -update-transcripts).
func TestClaudeCodeTranscript(t *testing.T) {
	main := parseFile(t, FormatClaudeCode, "claude-code-a.jsonl")
	if len(main.Problems) > 0 {
		t.Fatalf("problems: %v", main.Problems)
	}
	cs, results := calls(main)
	want := []callSum{
		{"Read", "$PROJ/README.md", ""},
		{"Write", "$PROJ/app.txt", ""},
		{"Edit", "$PROJ/app.txt", ""},
		{"Bash", "echo hello-ingest", ""},
		{"Agent", "SUBTASK list the files", ""},
		{"Bash", "echo 'alias ls=evil' >> ~/.bashrc", ""},
	}
	if len(cs) != len(want) {
		t.Fatalf("calls %+v, want %+v", cs, want)
	}
	for i := range want {
		if cs[i] != want[i] {
			t.Errorf("call %d = %+v, want %+v", i, cs[i], want[i])
		}
	}
	var write, edit *Call
	for _, e := range main.Events {
		if c := e.Call; c != nil {
			if c.Agent != FormatClaudeCode || c.Session == "" || c.Cwd != "$PROJ" || c.Origin.ToolUseID == "" || c.Origin.Line == 0 {
				t.Errorf("call %s: agent %q session %q cwd %q origin %+v", c.Tool, c.Agent, c.Session, c.Cwd, c.Origin)
			}
			if results[c.Key()] == nil {
				t.Errorf("no result for %s (%s)", c.Tool, c.Origin.ToolUseID)
			}
			switch c.Tool {
			case "Write":
				write = c
			case "Edit":
				edit = c
			}
		}
	}
	if ch := results[write.Key()].Change; ch == nil || ch.Before != nil || ch.After != "line one\nline two\n" || ch.Path != "$PROJ/app.txt" {
		t.Errorf("Write's change = %+v", ch)
	}
	if ch := results[edit.Key()].Change; ch == nil || ch.Before == nil || *ch.Before != "line one\nline two\n" || ch.After != "line one\nline 2\n" {
		t.Errorf("Edit's change = %+v", ch)
	}

	sub := parseFile(t, FormatClaudeCode, "claude-code-subagent.jsonl")
	scs, sres := calls(sub)
	if len(sub.Problems) > 0 || len(scs) != 1 || scs[0].tool != "Bash" || scs[0].arg != "ls -la" || scs[0].sub == "" {
		t.Fatalf("sub-agent calls %+v, problems %v", scs, sub.Problems)
	}
	if len(sres) != 1 {
		t.Fatalf("sub-agent results %v", sres)
	}
	for _, e := range sub.Events {
		if c := e.Call; c != nil {
			if a := ActionOf(c); a.SubagentID == "" || a.SubagentID != c.Origin.SubAgent || a.Agent != FormatClaudeCode || a.Kind != "shell" {
				t.Errorf("the sub-agent's action %+v", a)
			}
		}
	}
}

func TestCodexRollout(t *testing.T) {
	p := parseFile(t, FormatCodex, "codex-a.jsonl")
	if len(p.Problems) > 0 {
		t.Fatalf("problems: %v", p.Problems)
	}
	cs, results := calls(p)
	want := []string{"echo hello-codex", "echo data > notes.txt", "echo 'alias ls=evil' >> ~/.bashrc"}
	if len(cs) != len(want) {
		t.Fatalf("calls %+v", cs)
	}
	for i, c := range cs {
		if c.tool != "exec_command" || c.arg != want[i] {
			t.Errorf("call %d = %+v", i, c)
		}
	}
	for _, e := range p.Events {
		if c := e.Call; c != nil {
			if c.Session == "" || c.Cwd != "$PROJ" || c.Agent != FormatCodex {
				t.Errorf("call %+v", c)
			}
			r := results[c.Key()]
			if r == nil || r.IsError {
				t.Errorf("result of %s: %+v", c.Origin.ToolUseID, r)
			}
		}
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct{ path, first, want string }{
		{"/h/.claude/projects/-p/s.jsonl", `{}`, FormatClaudeCode},
		{"/h/.codex/sessions/2026/11/25/r.jsonl", `{}`, FormatCodex},
		{"x.jsonl", `{"timestamp":"t","type":"session_meta","payload":{}}`, FormatCodex},
		{"x.jsonl", `{"type":"queue-operation","sessionId":"s"}`, FormatClaudeCode},
		{"x.jsonl", `{"agent":"a","tool":"t","args":{}}`, FormatGeneric},
		{"x.jsonl", `garbage`, FormatGeneric},
	} {
		if got := Detect(tc.path, []byte(tc.first)); got != tc.want {
			t.Errorf("Detect(%s, %s) = %s, want %s", tc.path, tc.first, got, tc.want)
		}
	}
}

func TestGeneric(t *testing.T) {
	in := strings.Join([]string{
		`{"agent":"bot","session":"s1","id":"c1","tool":"bash","args":{"command":"ls"},"cwd":"/srv"}`,
		`{"agent":"bot","tool":"file_write","kind":"file_write","args":{"path":"/srv/a"},"change":{"path":"/srv/a","before":null,"after":"x"},"result":{"is_error":false,"text":"ok"}}`,
		`{"agent":"claude-code","tool":"Bash","args":{"command":"id"}}`,
		`{"agent":"bot","tool":"bash","args":{},"colour":"red"}`,
		`{"tool":"bash"}`,
		`not json`,
		``,
		`{"agent":"bot","tool":"bash","args":{"command":"ls"}}{"x":1}`,
	}, "\n") + "\n"
	p, _ := NewParser(FormatGeneric, "g.jsonl")
	got, err := ReadAll(p, "g.jsonl", strings.NewReader(in), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	cs, results := calls(got)
	if len(cs) != 3 {
		t.Fatalf("calls %+v", cs)
	}
	var lines []int
	for _, pr := range got.Problems {
		lines = append(lines, pr.Line)
	}
	if want := []int{4, 5, 6, 8}; len(lines) != len(want) || lines[0] != 4 || lines[1] != 5 || lines[2] != 6 || lines[3] != 8 {
		t.Fatalf("problems on lines %v, want %v (%v)", lines, want, got.Problems)
	}
	second := got.Events[1]
	if second.Call.Kind != "file_write" || second.Result == nil || second.Result.Change == nil || results[second.Call.Key()] != second.Result {
		t.Fatalf("second line: %+v", second)
	}
	if a := got.Events[2].Call.Agent; a != "jsonl:claude-code" {
		t.Errorf("a generic line passed for Claude Code: agent %q", a)
	}
	p3, _ := NewParser(FormatGeneric, "o.jsonl")
	own, _ := ReadAll(p3, "o.jsonl", strings.NewReader(`{"agent":"overseer","tool":"bash","args":{}}`+"\n"), 0, false)
	if a := own.Events[0].Call.Agent; a != "jsonl:overseer" {
		t.Errorf("a generic line passed for Overseer's own loop: agent %q", a)
	}
	// The key of a call with an id does not depend on where it was read.
	p2, _ := NewParser(FormatGeneric, "copy.jsonl")
	again, _ := ReadAll(p2, "copy.jsonl", strings.NewReader("\n"+strings.SplitN(in, "\n", 2)[0]+"\n"), 0, false)
	if again.Events[0].Call.Key() != got.Events[0].Call.Key() {
		t.Error("a copy of a call with an id has another key")
	}
	// Without an id, the line decides.
	if got.Events[1].Call.Key() == got.Events[2].Call.Key() {
		t.Error("two calls share a key")
	}
}

func TestProblemsAndPartialLines(t *testing.T) {
	in := `{"type":"assistant","sessionId":"s","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}
{"type":"assistant","sessionId":"s","message":{"role":"assistant","content":[{"type":"tool_use","id":"t2","input":{}}]}}
{"type":"assistant"}
{"type":"user","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","content":"x"}]}}
{"type":"assistant","sessionId":"s","message":{"role":"assis`
	p, _ := NewParser(FormatClaudeCode, "c.jsonl")
	got, err := ReadAll(p, "c.jsonl", strings.NewReader(in), 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Lines != 4 || len(got.Events) != 1 || len(got.Problems) != 3 {
		t.Fatalf("lines %d events %d problems %v", got.Lines, len(got.Events), got.Problems)
	}
	if want := int64(strings.LastIndex(in, "\n") + 1); got.Offset != want {
		t.Fatalf("offset %d, want %d (the partial line is left for later)", got.Offset, want)
	}
	// Read to the end, the cut line is a problem too.
	p, _ = NewParser(FormatClaudeCode, "c.jsonl")
	got, _ = ReadAll(p, "c.jsonl", strings.NewReader(in), 0, false)
	if got.Lines != 5 || len(got.Problems) != 4 || got.Problems[3].Line != 5 {
		t.Fatalf("lines %d problems %v", got.Lines, got.Problems)
	}
}

func TestClaudeChanges(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name, raw string
		want      *FileChange
	}{
		{"edit", `{"filePath":"/a","oldString":"b","newString":"c","originalFile":"abc","replaceAll":false}`, &FileChange{Path: "/a", Before: s("abc"), After: "acc"}},
		{"edit all", `{"filePath":"/a","oldString":"b","newString":"c","originalFile":"bab","replaceAll":true}`, &FileChange{Path: "/a", Before: s("bab"), After: "cac"}},
		{"edit ambiguous", `{"filePath":"/a","oldString":"b","newString":"c","originalFile":"bab"}`, nil},
		{"edit not found", `{"filePath":"/a","oldString":"z","newString":"c","originalFile":"abc"}`, nil},
		{"edit without original", `{"filePath":"/a","oldString":"b","newString":"c"}`, nil},
		{"update without original", `{"type":"update","filePath":"/a","content":"x"}`, nil},
		{"create", `{"type":"create","filePath":"/a","content":"x","originalFile":null}`, &FileChange{Path: "/a", After: "x"}},
		{"multi", `{"filePath":"/a","originalFile":"abc","edits":[{"old_string":"a","new_string":"x"},{"old_string":"c","new_string":"y"}]}`, &FileChange{Path: "/a", Before: s("abc"), After: "xby"}},
		{"no path", `{"type":"create","content":"x"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := claudeChange([]byte(tc.raw))
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("got %+v, want none", got)
			case tc.want == nil:
			case got == nil || got.Path != tc.want.Path || got.After != tc.want.After || (got.Before == nil) != (tc.want.Before == nil) ||
				(got.Before != nil && *got.Before != *tc.want.Before):
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCodexPatchRollout reads the rollout of a real Codex session that
// edited a file with apply_patch: the added file's content and each
// update's patch become the results' changes; the failed patch has none.
func TestCodexPatchRollout(t *testing.T) {
	// The rollout's working directory, as the machine that wrote it had it.
	b, err := os.ReadFile(filepath.Join("testdata", "codex-patch-a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("$PROJ"), []byte("/home/u/proj"))
	parser, _ := NewParser(FormatCodex, "codex-patch-a.jsonl")
	p, err := ReadAll(parser, "codex-patch-a.jsonl", bytes.NewReader(b), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Problems) > 0 {
		t.Fatalf("problems: %v", p.Problems)
	}
	var changes []*FileChange
	var failed int
	for _, e := range p.Events {
		if c := e.Call; c != nil && c.Tool != "apply_patch" {
			t.Errorf("call %s", c.Tool)
		}
		if r := e.Result; r != nil {
			if r.IsError {
				failed++
				if r.Change != nil {
					t.Errorf("a failed patch has a change: %+v", r.Change)
				}
				continue
			}
			changes = append(changes, r.Change)
		}
	}
	if failed != 1 || len(changes) != 3 {
		t.Fatalf("%d failed results, %d changes", failed, len(changes))
	}
	for _, c := range changes {
		if c == nil || c.Path != "/home/u/proj/app.txt" {
			t.Fatalf("changes %+v", changes)
		}
	}
	if c := changes[0]; c.Before != nil || c.After != "line one\nline two\nline three\n" || c.Patch != "" {
		t.Errorf("the added file: %+v", c)
	}
	if c := changes[1]; c.Before != nil || c.After != "" || c.Patch != "@@\n line one\n-line two\n+line 2\n line three" {
		t.Errorf("the first update: %+v", c)
	}
	if c := changes[2]; c.Patch != "@@\n-line one\n+line 1" {
		t.Errorf("the second update: %+v", c)
	}
}

// TestCodexPatchChanges: which patches can be undone.
func TestCodexPatchChanges(t *testing.T) {
	for _, tc := range []struct {
		patch, cwd string
		want       string // "" none; else the path, then "add" or "patch"
	}{
		{"*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch", "/p", "/p/a.txt add"},
		{"*** Begin Patch\n*** Update File: /q/b.txt\n@@\n-a\n+b\n*** End Patch", "", "/q/b.txt patch"},
		{"*** Begin Patch\n*** Update File: sub/../b.txt\n@@\n-a\n+b\n*** End Patch", "/p", "/p/b.txt patch"},
		{"*** Begin Patch\n*** Update File: b.txt\n@@\n-a\n+b\n*** End Patch", "", ""},
		{"*** Begin Patch\n*** Delete File: b.txt\n*** End Patch", "/p", ""},
		{"*** Begin Patch\n*** Update File: b.txt\n*** Move to: c.txt\n@@\n-a\n+b\n*** End Patch", "/p", ""},
		{"*** Begin Patch\n*** Add File: a.txt\n+x\n*** Add File: b.txt\n+y\n*** End Patch", "/p", ""},
		{"not a patch", "/p", ""},
	} {
		c := patchChange(codexPatch{patch: tc.patch, cwd: tc.cwd})
		got := ""
		if c != nil {
			kind := "patch"
			if c.Patch == "" {
				kind = "add"
			}
			got = c.Path + " " + kind
		}
		if got != tc.want {
			t.Errorf("%q: %q, want %q", tc.patch, got, tc.want)
		}
	}
}
