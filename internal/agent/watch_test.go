package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/guard/paths"
	"github.com/overseer-dev/overseer/internal/llmtest"
)

// TestChangedFileNotice: a file the task read and that changes behind its
// back is named in the next prompt; the prompt carries the absolute time;
// the task's own writes raise no notice.
func TestChangedFileNotice(t *testing.T) {
	var h *harness
	notes := func() string { return filepath.Join(h.work, "notes.txt") }
	h = newHarness(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			if !strings.Contains(req.System+req.LastUser, "The time now is "+time.Now().UTC().Format("2006-01-02T")) {
				t.Errorf("no absolute time in the prompt:\n%s\n%s", req.System, req.LastUser)
			}
			return reply("", call("file_read", map[string]any{"file_path": "notes.txt"}, "read the notes", 0.9))
		case 1:
			if strings.Contains(req.LastUser, "changed outside this task") {
				t.Errorf("a notice before anything changed:\n%s", req.LastUser)
			}
			// The task writes another file it read: no notice for it.
			return reply("", call("file_write", map[string]any{"file_path": "own.txt", "content": "mine\n"}, "write my file", 0.9))
		case 2:
			// Someone else changes the notes.
			if err := os.WriteFile(notes(), []byte("changed by someone else\n"), 0o644); err != nil {
				t.Error(err)
			}
			time.Sleep(200 * time.Millisecond) // let the file event arrive
			return reply("", call("bash", map[string]any{"command": "true"}, "wait", 0.9))
		case 3:
			if lacks(t, n, req, notes()+" changed outside this task") {
				return llmtest.Fail("no notice")
			}
			if strings.Contains(req.LastUser, "own.txt changed") {
				t.Errorf("a notice of the task's own write:\n%s", req.LastUser)
			}
			return reply("", doneDecision)
		}
		return llmtest.Fail("request %d was not expected", n)
	}), nil)
	tk := h.run(t, "read and write")
	if tk.Status != task.Done {
		t.Fatalf("status %s\n%s", tk.Status, h.out)
	}
}

// A file the task read that someone makes larger than any recorded read
// (a sparse file costs them nothing: here a terabyte, which would take an
// hour to hash) is named as changed without being read whole.
func TestChangedFileNoticeHugeFile(t *testing.T) {
	var h *harness
	notes := func() string { return filepath.Join(h.work, "notes.txt") }
	h = newHarness(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			return reply("", call("file_read", map[string]any{"file_path": "notes.txt"}, "read the notes", 0.9))
		case 1:
			if err := os.Truncate(notes(), max(paths.MaxRecordedRead+1, 1<<40)); err != nil {
				t.Error(err)
			}
			time.Sleep(200 * time.Millisecond) // let the file event arrive
			return reply("", call("bash", map[string]any{"command": "true"}, "wait", 0.9))
		case 2:
			if lacks(t, n, req, notes()+" changed outside this task") {
				return llmtest.Fail("no notice")
			}
			return reply("", doneDecision)
		}
		return llmtest.Fail("request %d was not expected", n)
	}), nil)
	tk := h.run(t, "read")
	if tk.Status != task.Done {
		t.Fatalf("status %s\n%s", tk.Status, h.out)
	}
}
