package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// The Codex session the patch rollback tests record: a file created and
// then updated twice by apply_patch (Codex's own edit tool, whose rollout
// holds the patch, not the file's previous content), and a patch that
// fails (its lines are not in the file).
var codexPatchCalls = []modeltest.ToolCall{
	{Name: "apply_patch", Freeform: "*** Begin Patch\n*** Add File: app.txt\n+line one\n+line two\n+line three\n*** End Patch\n"},
	{Name: "apply_patch", Freeform: "*** Begin Patch\n*** Update File: app.txt\n@@\n line one\n-line two\n+line 2\n line three\n*** End Patch\n"},
	{Name: "apply_patch", Freeform: "*** Begin Patch\n*** Update File: app.txt\n@@\n-line one\n+line 1\n*** End Patch\n"},
	{Name: "apply_patch", Freeform: "*** Begin Patch\n*** Update File: app.txt\n@@\n-no such line\n+x\n*** End Patch\n"},
}

// codexPatchModel is a model name Codex gives its apply_patch tool
// (free-form); the scripted server answers for any name.
const codexPatchModel = "gpt-5.5"

// recordCodexPatch runs Codex without any hook through the patch session.
func (e *env) recordCodexPatch(t *testing.T, bin string) []string {
	t.Helper()
	codexHome := e.codexHome(t)
	srv, out := e.codexWith(t, bin, codexHome, codexPatchModel, "", modeltest.Steps(e.expand(codexPatchCalls)...))
	rs := srv.Results()
	if len(rs) != len(codexPatchCalls) {
		t.Fatalf("%d tool results, want %d\n%s", len(rs), len(codexPatchCalls), out)
	}
	for i, r := range rs[:3] {
		if !strings.Contains(r.Content, "Success.") {
			t.Fatalf("patch %d did not apply: %+v\n%s", i, r, out)
		}
	}
	if strings.Contains(rs[3].Content, "Success.") {
		t.Fatalf("the patch whose lines are missing applied: %+v", rs[3])
	}
	return e.transcripts(t, filepath.Join(codexHome, "sessions"))
}

// TestAuditIngestCodexPatch: the real Codex edits a file with apply_patch,
// without Overseer in the path; after ingesting its rollout a person rolls
// the patches back, newest first — each by reversing the patch, as the
// rollout holds no previous content — down to removing the file the first
// patch created. A patch whose file changed since is refused.
func TestAuditIngestCodexPatch(t *testing.T) {
	codex := findCLI(t, "codex")
	overseertest.Binary(t)
	e := newEnv(t, false)
	e.recordCodexPatch(t, codex)
	app := filepath.Join(e.proj, "app.txt")
	if b, _ := os.ReadFile(app); string(b) != "line 1\nline 2\nline three\n" {
		t.Fatalf("app.txt after the session: %q", b)
	}
	r := e.overseer(t, "audit", "ingest", "--json", filepath.Join(e.userHome, ".codex", "sessions"))
	var rep ingestReport
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &rep) != nil {
		t.Fatalf("ingest: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if rep.Calls != 4 || rep.Results != 4 || len(rep.Undoable) != 3 {
		t.Fatalf("report %+v: want 4 calls with results, 3 of them undoable (the failed patch is not)", rep)
	}
	add, upd1, upd2 := rep.Undoable[0].ActionID, rep.Undoable[1].ActionID, rep.Undoable[2].ActionID
	for _, u := range rep.Undoable {
		if u.Path != app {
			t.Fatalf("undoable %+v", rep.Undoable)
		}
	}
	rollback := func(id string, yes bool) overseertest.Result {
		t.Helper()
		args := []string{"audit", "rollback", id}
		if yes {
			args = append(args, "--yes")
		}
		return e.overseer(t, args...)
	}
	// Out of order: the first update's lines were changed by the second.
	if r := rollback(upd1, true); r.Code == 0 {
		t.Fatalf("rolled back a patch under the one that followed it: %s", r.Stdout)
	}
	// Without --yes: the diff, nothing written.
	if r := rollback(upd2, false); r.Code != 0 || !strings.Contains(r.Stdout, "-line 1") || !strings.Contains(r.Stdout, "+line one") {
		t.Fatalf("plan: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	if b, _ := os.ReadFile(app); string(b) != "line 1\nline 2\nline three\n" {
		t.Fatalf("the plan wrote the file: %q", b)
	}
	if r := rollback(upd2, true); r.Code != 0 {
		t.Fatalf("rollback of the last patch: %s %s", r.Stdout, r.Stderr)
	}
	if b, _ := os.ReadFile(app); string(b) != "line one\nline 2\nline three\n" {
		t.Fatalf("app.txt after rolling back the last patch: %q", b)
	}
	// Done once: the patch's lines are gone now.
	if r := rollback(upd2, true); r.Code == 0 {
		t.Fatalf("rolled back twice: %s", r.Stdout)
	}
	// A person's later work in the patch's lines is never clobbered.
	if err := os.WriteFile(app, []byte("line one\nline 2, edited\nline three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := rollback(upd1, true); r.Code == 0 {
		t.Fatalf("rolled back over later work: %s", r.Stdout)
	}
	if err := os.WriteFile(app, []byte("line one\nline 2\nline three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := rollback(upd1, true); r.Code != 0 {
		t.Fatalf("rollback of the first update: %s %s", r.Stdout, r.Stderr)
	}
	if b, _ := os.ReadFile(app); string(b) != "line one\nline two\nline three\n" {
		t.Fatalf("app.txt after rolling back the first update: %q", b)
	}
	if r := rollback(add, true); r.Code != 0 {
		t.Fatalf("rollback of the added file: %s %s", r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(app); !os.IsNotExist(err) {
		t.Fatalf("app.txt, which the agent added, is still there: %v", err)
	}
	if n := strings.Count(e.overseer(t, "audit", "export").Stdout, `"type":"rollback"`); n != 3 {
		t.Fatalf("%d rollback records, want 3", n)
	}
}
