package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/llmtest"
)

type grantJSON struct {
	ID      string `json:"id"`
	Parent  string `json:"parent"`
	Subject struct {
		Agent        string `json:"agent"`
		Session      string `json:"session"`
		SubagentType string `json:"subagent_type"`
		SubagentID   string `json:"subagent_id"`
	} `json:"subject"`
	Allow []struct {
		Tools []string `json:"tools"`
		Under []string `json:"under"`
	} `json:"allow"`
	Budget struct {
		Steps int64 `json:"steps"`
	} `json:"budget"`
	Revoked *struct {
		Reason string `json:"reason"`
	} `json:"revoked"`
	Usage struct {
		Steps int64 `json:"steps"`
	} `json:"usage"`
}

// TestSubTaskUnderAChildGrant: a task of the own loop holds a grant
// (subtask, file_read and file_write under docs/, 6 steps) and starts a
// sub-task asking for more than it has (50 steps, and bash). The sub-task
// runs under a grant carved out of the task's: its read in docs/ runs
// without asking, its write outside docs/ is put to a person, and once a
// person revokes the task's grant its next read is put to a person too.
// The child never gets more than the parent had left, and its use is
// charged to the parent.
func TestSubTaskUnderAChildGrant(t *testing.T) {
	e := newEnv(t)
	docs := filepath.Join(e.work, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docs, "guide.md"), []byte("guide text: use the force\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.initDB()
	r := e.run("grant", "issue", "--agent", "overseer", "--tool", "subtask,file_read,file_write", "--under", docs,
		"--steps", "6", "--ttl", "1h", "--reason", "docs work", "--json")
	var parent grantJSON
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &parent) != nil || parent.ID == "" {
		t.Fatalf("grant issue: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	out := filepath.Join(e.work, "out.txt")
	guide := filepath.Join(docs, "guide.md")
	const subGoal = "Check the guide in docs"
	srv := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		child := strings.Contains(req.LastUser+req.System, subGoal) && !strings.Contains(req.LastUser+req.System, "Use a sub-task")
		switch n {
		case 0:
			if r, ok := expect(t, n, req, "Use a sub-task", "subtask"); !ok {
				return r
			}
			return decision("A sub-task will check the guide.\n\n", toolCall("subtask",
				map[string]any{"goal": subGoal, "tools": []any{"file_read", "file_write", "bash"}, "steps": 50}, "delegate the check"))
		case 1:
			if !child {
				return llmtest.Fail("request 1 is not the sub-task's: %s", req.LastUser)
			}
			if strings.Contains(strings.Join(req.Tools, ",")+req.System, `"subtask"`) {
				return llmtest.Fail("the sub-task was offered the subtask tool")
			}
			return decision("Reading the guide.\n\n", toolCall("file_read", map[string]any{"file_path": guide}, "read the guide"))
		case 2:
			if r, ok := expect(t, n, req, "use the force"); !ok {
				return r
			}
			return decision("Writing a note outside docs.\n\n", toolCall("file_write",
				map[string]any{"file_path": out, "content": "checked\n"}, "note the check"))
		case 3:
			// A person revokes the task's grant while the sub-task works.
			if r := e.run("grant", "revoke", parent.ID, "--reason", "enough"); r.Code != 0 {
				return llmtest.Fail("grant revoke: %s %s", r.Stdout, r.Stderr)
			}
			return decision("Reading the guide again.\n\n", toolCall("file_read", map[string]any{"file_path": guide}, "read again"))
		case 4:
			return decision("Checked.\n\n", done("the guide says to use the force"))
		case 5:
			if r, ok := expect(t, n, req, "done", "use the force"); !ok {
				return r
			}
			return decision("The sub-task checked the guide.\n\n", done("checked the guide through a sub-task"))
		}
		return llmtest.Fail("request %d was not expected", n)
	}))
	p := e.start("run", "--no-plan", "--model", "openai:test-model@"+srv.URL, "Use a sub-task to check docs/guide.md")
	e.answer("approve", e.awaitApproval(p, "file_write"))
	e.answer("approve", e.awaitApproval(p, "file_read"))
	e.answer("approve", e.awaitApproval(p, "overseer.confirm_done"))
	if code := p.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out.String())
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "checked\n" {
		t.Fatalf("out.txt: %q %v\n%s", b, err, p.out.String())
	}

	// The grants: the child lies within the parent and is revoked with it.
	r = e.run("grant", "list", "--all", "--json")
	var grants []grantJSON
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &grants) != nil || len(grants) != 2 {
		t.Fatalf("grant list: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	var child grantJSON
	for _, g := range grants {
		if g.ID != parent.ID {
			child = g
		}
	}
	if child.Parent != parent.ID || child.Subject.Agent != "overseer" || child.Subject.SubagentType != "subtask" || child.Subject.SubagentID == "" {
		t.Fatalf("child grant %+v", child)
	}
	if child.Budget.Steps != 5 {
		t.Errorf("the child has %d steps; the parent had 5 left after the subtask call", child.Budget.Steps)
	}
	for _, pm := range child.Allow {
		for _, tool := range pm.Tools {
			if tool != "file_read" && tool != "file_write" {
				t.Errorf("the child's permit names %s, which the parent does not allow", tool)
			}
		}
		if len(pm.Under) != 1 || pm.Under[0] != docs {
			t.Errorf("the child's permit is not limited to docs/: %+v", pm)
		}
	}
	for _, g := range grants {
		if g.Revoked == nil {
			t.Errorf("grant %s is not revoked", g.ID)
		}
		if g.ID == parent.ID && g.Usage.Steps != 2 {
			// The subtask call and the child's first read (charged to
			// every ancestor).
			t.Errorf("the parent used %d steps, want 2", g.Usage.Steps)
		}
	}

	// Only the calls outside the child's grant went to a person.
	asked := map[string]int{}
	r = e.run("audit", "export")
	for _, line := range strings.Split(r.Stdout, "\n") {
		var rec struct {
			Type string `json:"type"`
			Tool string `json:"tool"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Type == "approval_request" {
			asked[rec.Tool]++
		}
	}
	if asked["file_read"] != 1 || asked["file_write"] != 1 || asked["subtask"] != 0 {
		t.Errorf("questions to a person: %v; want one file_write and one file_read (after the revocation)", asked)
	}
	tasks := e.tasks()
	if len(tasks) != 2 {
		t.Fatalf("tasks %+v", tasks)
	}
	for _, tk := range tasks {
		if tk.Status != "done" {
			t.Errorf("task %s is %s", tk.ID, tk.Status)
		}
	}
	e.verifyAudit()
}
