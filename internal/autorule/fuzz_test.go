package autorule

import (
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

func FuzzDecodeRule(f *testing.F) {
	f.Add([]byte(`{"name":"n","trigger":{"type":"time_based","tool":"shell","from":"22:00","to":"06:00","days":["sat"],"tz":"Europe/Berlin"},"action":{"type":"block_tool"}}`))
	f.Add([]byte(`{"name":"n","trigger":{"type":"pattern_match","regex":"rm -rf"},"action":{"type":"require_approval"}}`))
	f.Add([]byte(`{"name":"n","trigger":{"type":"count_threshold","tool":"file_*","count":3,"window_minutes":1.5},"action":{"type":"block_tool","duration_minutes":60}}`))
	f.Add([]byte(`{"name":"n","trigger":{"type":"error_rate","percent":50,"window_minutes":5},"action":{"type":"pause_agent"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRule(b)
		if err != nil {
			return
		}
		r.ID = "x"
		set, err := Compile([]Rule{r}, nil)
		if err != nil {
			t.Fatalf("a decoded rule does not compile: %v", err)
		}
		c := NewCounters(time.Hour)
		c.Add(time.Unix(0, 0), Sample{Seq: 1, At: time.Unix(0, 0), Agent: "a", Tool: "Bash", Kind: "shell", Call: true})
		for _, f := range set.Check(&action.Action{Agent: "a", Tool: "Bash", Kind: action.KindShell, Args: map[string]any{"command": "ls"}},
			Env{Now: time.Unix(0, 0), Counters: c, Holds: NewHolds()}) {
			if f.Loosens && f.Level > action.Auto {
				t.Fatalf("a loosening finding asks for %s", f.Level)
			}
		}
	})
}

func FuzzDecodeAnomalyRule(f *testing.F) {
	f.Add([]byte(`{"name":"n","tool_name":"file_write","threshold_count":20,"window_seconds":300,"baseline_multiplier":5,"action":"stop_and_rollback","notify_channels":["web"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeAnomalyRule(b)
		if err != nil {
			return
		}
		if _, err := Compile(nil, []AnomalyRule{r}); err != nil {
			t.Fatalf("a decoded rule does not compile: %v", err)
		}
		if r.RollbackDepth() <= 0 || r.RollbackDepth() > MaxRollback {
			t.Fatalf("rollback depth %d", r.RollbackDepth())
		}
	})
}
