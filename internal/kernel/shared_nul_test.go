package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// An agent's names with bytes PostgreSQL's text refuses (NUL) fail only
// that agent's calls: the other agents' calls are judged as before on
// every instance.
func TestSharedNULNames(t *testing.T) {
	ctx := context.Background()
	ks, _, _ := openShared(t, 2, 20*time.Millisecond)
	for _, bad := range []*action.Action{
		{Tool: "Read", Agent: "a\x00b", Session: "s", Cwd: "/proj", Args: map[string]any{"file_path": "/proj/x.go"}},
		{Tool: "Read", Agent: "a", Session: "s\x00", Cwd: "/proj", Args: map[string]any{"file_path": "/proj/x.go"}},
		{Tool: "Re\x00ad", Kind: action.KindFileRead, Agent: "a", Session: "s", Cwd: "/proj", Args: map[string]any{"file_path": "/proj/x.go"}},
		{Tool: "Write", Agent: "a\x00", Session: "s\x00", Cwd: "/proj", Args: map[string]any{"file_path": "/etc/x\x00", "content": "x"}},
		{Tool: "Bash", Agent: "a\x00", Session: "s\x00", Cwd: "/proj", Args: map[string]any{"command": "rm -rf /tmp/x\x00"}},
	} {
		for i := range 4 {
			sub, err := ks[i%2].Submit(ctx, bad)
			if err == nil && sub.Verdict.Allowed() {
				t.Logf("NUL action allowed: %q", bad.Agent)
			}
		}
	}
	for i, k := range ks {
		sub, err := k.Submit(ctx, &action.Action{Tool: "Read", Agent: "other", Session: "fine", Cwd: "/proj",
			Args: map[string]any{"file_path": "/proj/y.go"}})
		if err != nil || !sub.Verdict.Allowed() {
			t.Fatalf("instance %d after the NUL names: %v %+v", i, err, sub)
		}
	}
}
