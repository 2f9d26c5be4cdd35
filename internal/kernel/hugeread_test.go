package kernel_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
)

// A read is recorded with its file's hash while it is judged, and an edit
// after a change hashes the file again: a file the agent makes huge (a
// sparse 32 GiB file costs nothing to make) must not keep the judgement
// hashing it for many seconds. A file larger than any read tool reads whole
// is not remembered as read, and an edit of a file grown past that size
// since it was read is refused without hashing it. The twin, a small file
// read and edited, is TestSubmittedReadIsRememberedWithItsVerdict.
func TestHugeFileDoesNotStallTheJudgement(t *testing.T) {
	k := open(t, clock.Real{}, "")
	proj := t.TempDir()
	submit := func(tool string, args map[string]any) action.Verdict {
		t.Helper()
		start := time.Now()
		sub, err := k.Submit(t.Context(), &action.Action{Tool: tool, Agent: "claude-code", Session: "s-huge", Cwd: proj, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("%s %v took %s to judge", tool, args, d)
		}
		return sub.Verdict
	}
	const huge = 32 << 30
	big := filepath.Join(proj, "big.bin")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, huge); err != nil {
		t.Skipf("no sparse file: %v", err)
	}
	submit("Read", map[string]any{"file_path": big, "limit": 10})
	if _, ok, err := k.Reads().LastRead(t.Context(), "s-huge", big); err != nil || ok {
		t.Fatalf("a %d-byte file remembered as read (ok=%v, %v)", huge, ok, err)
	}

	grown := filepath.Join(proj, "grown.txt")
	if err := os.WriteFile(grown, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	submit("Read", map[string]any{"file_path": grown})
	if _, ok, err := k.Reads().LastRead(t.Context(), "s-huge", grown); err != nil || !ok {
		t.Fatalf("the small file is not remembered as read (ok=%v, %v)", ok, err)
	}
	if err := os.Truncate(grown, huge); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(grown, later, later); err != nil {
		t.Fatal(err)
	}
	if v := submit("Edit", map[string]any{"file_path": grown, "old_string": "one", "new_string": "uno"}); v.Level.RunsWithoutPerson() {
		t.Fatalf("an edit of a file grown since it was read runs: %s", v.Level)
	}
}
