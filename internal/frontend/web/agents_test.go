package web

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// The audit view says what the audited mode's records are.
func TestDescribeAuditedMode(t *testing.T) {
	in, _ := json.Marshal(kernel.IngestedRecord{Ingested: true, Source: kernel.IngestSource{File: "s.jsonl", Line: 3},
		Action: action.Action{Tool: "Bash", Args: map[string]any{"command": "ls"}}, Verdict: action.Verdict{Level: action.Auto}})
	res, _ := json.Marshal(map[string]any{"ingested": true, "change": map[string]any{"path": "/p/a.txt"}})
	tr, _ := json.Marshal(kernel.TrustChange{Agent: "bot", Op: "promote", From: kernel.ModeAudited, To: kernel.ModeDelegated, Who: "alice", Reason: "ok"})
	rb, _ := json.Marshal(map[string]any{"path": "/p/a.txt", "who": "alice", "channel": "web"})
	for _, tc := range []struct {
		typ  string
		data []byte
		want string
	}{
		{audit.TypeIngested, in, "ingested (s.jsonl:3)"},
		{audit.TypeIngestedResult, res, "wrote /p/a.txt (can be rolled back)"},
		{audit.TypeTrust, tr, "bot promoted: audited → delegated by alice: ok"},
		{audit.TypeRollback, rb, "rolled back /p/a.txt by alice via web"},
	} {
		sum, _, _ := describe(store.AuditRecord{Type: tc.typ, Data: tc.data})
		if !strings.Contains(sum, tc.want) {
			t.Errorf("%s: %q, want %q", tc.typ, sum, tc.want)
		}
	}
}
