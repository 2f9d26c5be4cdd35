package kernel_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// An agent's names with bytes PostgreSQL's text refuses (NUL), or too
// long for an index entry, fail at most that agent's calls: the other
// agents' calls are judged as before on every instance.
func TestSharedNULNames(t *testing.T) {
	ctx := context.Background()
	ks, _, _ := openShared(t, 2, 20*time.Millisecond)
	var b strings.Builder
	h := sha256.Sum256([]byte("name"))
	for b.Len() < 6000 {
		b.WriteString(hex.EncodeToString(h[:]))
		h = sha256.Sum256(h[:])
	}
	long := b.String()
	for _, bad := range []*action.Action{
		{Tool: "Read", Agent: long, Session: long, Cwd: "/proj", Args: map[string]any{"file_path": "/proj/x.go"}},
		{Tool: "Read" + long, Kind: action.KindFileRead, Agent: "a", Session: "s", Cwd: "/proj", Args: map[string]any{"file_path": "/proj/x.go"}},
		{Tool: "Write", Agent: long, Session: long, Cwd: "/proj", Args: map[string]any{"file_path": "/etc/x", "content": "x"}},
		{Tool: "Read", Agent: "a\x00b", Session: "s", Cwd: "/proj", Args: map[string]any{"file_path": "/proj/x.go"}},
		{Tool: "Read", Agent: "a", Session: "s\x00", Cwd: "/proj", Args: map[string]any{"file_path": "/proj/x.go"}},
		{Tool: "Re\x00ad", Kind: action.KindFileRead, Agent: "a", Session: "s", Cwd: "/proj", Args: map[string]any{"file_path": "/proj/x.go"}},
		{Tool: "Write", Agent: "a\x00", Session: "s\x00", Cwd: "/proj", Args: map[string]any{"file_path": "/etc/x\x00", "content": "x"}},
		{Tool: "Bash", Agent: "a\x00", Session: "s\x00", Cwd: "/proj", Args: map[string]any{"command": "rm -rf /tmp/x\x00"}},
	} {
		for i := range 4 {
			sub, err := ks[i%2].Submit(ctx, bad)
			if i == 0 && testing.Verbose() {
				if err != nil {
					t.Logf("%.20q/%.20q/%.20q: %.200v", bad.Agent, bad.Session, bad.Tool, err)
				} else {
					t.Logf("%.20q/%.20q/%.20q: %s", bad.Agent, bad.Session, bad.Tool, sub.Verdict.Summary())
				}
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
