package autorule

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/usage"
)

// t0 is a Wednesday, 23:30 UTC.
var t0 = time.Date(2026, 11, 25, 23, 30, 0, 0, time.UTC)

func mustRule(t *testing.T, js string) Rule {
	t.Helper()
	r, err := DecodeRule([]byte(js))
	if err != nil {
		t.Fatalf("DecodeRule(%s): %v", js, err)
	}
	if r.ID == "" {
		r.ID = "r-" + strings.ReplaceAll(r.Name, " ", "-")
	}
	return r
}

func call(agent, tool string, kind action.Kind, args map[string]any) *action.Action {
	return &action.Action{Agent: agent, Tool: tool, Kind: kind, Args: args}
}

func TestDecodeRuleRejects(t *testing.T) {
	bad := []string{
		`{"name":"x","trigger":{"type":"nope"},"action":{"type":"notify"}}`,
		`{"name":"","trigger":{"type":"time_based","from":"22:00","to":"06:00"},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"time_based","from":"25:00","to":"06:00"},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"time_based","from":"22:00","to":"22:00"},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"time_based","from":"22:00","to":"06:00","tz":"Mars/Olympus"},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"time_based","from":"22:00","to":"06:00","days":["caturday"]},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"count_threshold","count":0,"window_minutes":5},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"count_threshold","count":3},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"pattern_match","text":"a","regex":"b"},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"pattern_match","regex":"(("},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"pattern_match","text":"a","count":3},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"error_rate","percent":150,"window_minutes":5},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"cost_threshold","usd":0,"window_minutes":5},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"time_based","from":"22:00","to":"06:00","tool":"shell"},"action":{"type":"explode"}}`,
		`{"name":"x","trigger":{"type":"time_based","from":"22:00","to":"06:00","tool":"shell"},"action":{"type":"require_approval","level":"auto"}}`,
		// Loosening after failures or costs, or for every tool, is refused.
		`{"name":"x","trigger":{"type":"error_rate","percent":50,"window_minutes":5,"tool":"shell"},"action":{"type":"auto_approve"}}`,
		`{"name":"x","trigger":{"type":"time_based","from":"22:00","to":"06:00"},"action":{"type":"auto_approve"}}`,
		`{"name":"x","trigger":{"type":"time_based","from":"22:00","to":"06:00","tool":"[x"},"action":{"type":"notify"}}`,
		`{"name":"x","trigger":{"type":"time_based","from":"22:00","to":"06:00"},"action":{"type":"notify"},"extra":1}`,
		`{"name":"x","trigger":{"type":"time_based","from":"22:00","to":"06:00"},"action":{"type":"notify"}} {}`,
	}
	for i, js := range bad {
		if _, err := DecodeRule([]byte(js)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%d: DecodeRule(%s) = %v, want ErrInvalid", i, js, err)
		}
	}
	r := mustRule(t, `{"name":"n","trigger":{"type":"pattern_match","text":"x"},"action":{"type":"notify"}}`)
	if !r.Enabled || r.Priority != DefaultPriority {
		t.Errorf("defaults not applied: %+v", r)
	}
	r = mustRule(t, `{"name":"n","enabled":false,"priority":0,"trigger":{"type":"pattern_match","text":"x"},"action":{"type":"notify"}}`)
	if r.Enabled || r.Priority != 0 {
		t.Errorf("explicit values overridden: %+v", r)
	}
}

func TestTimeBased(t *testing.T) {
	night := mustRule(t, `{"name":"night","trigger":{"type":"time_based","tool":"shell","from":"22:00","to":"06:00"},"action":{"type":"block_tool"}}`)
	weekend := mustRule(t, `{"name":"weekend","trigger":{"type":"time_based","tool":"shell","from":"22:00","to":"06:00","days":["fri"]},"action":{"type":"block_tool"}}`)
	berlin := mustRule(t, `{"name":"berlin","trigger":{"type":"time_based","tool":"shell","from":"09:00","to":"17:00","tz":"Europe/Berlin"},"action":{"type":"require_approval"}}`)
	set, err := Compile([]Rule{night, weekend, berlin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		at   time.Time
		want []string
	}{
		{t0, []string{"night"}},                                              // Wed 23:30
		{t0.Add(6 * time.Hour), []string{"night"}},                           // Thu 05:30
		{t0.Add(7 * time.Hour), nil},                                         // Thu 06:30
		{t0.Add(9*time.Hour + 30*time.Minute), []string{"berlin"}},           // Thu 09:00 UTC = 10:00 Berlin
		{t0.Add(17 * time.Hour), nil},                                        // Thu 16:30 UTC = 17:30 Berlin
		{t0.Add(2 * 24 * time.Hour), []string{"night", "weekend"}},           // Fri 23:30
		{t0.Add(2*24*time.Hour + 3*time.Hour), []string{"night", "weekend"}}, // Sat 02:30, Friday's night
		{t0.Add(3*24*time.Hour + 3*time.Hour), []string{"night"}},            // Sun 02:30, Saturday's night
	}
	for _, c := range cases {
		t.Run(c.at.Format("Mon15:04"), func(t *testing.T) {
			fs := set.Check(call("a", "Bash", action.KindShell, nil), Env{Now: c.at})
			var got []string
			for _, f := range fs {
				got = append(got, f.RuleName)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("fired %v, want %v", got, c.want)
			}
			for _, f := range fs {
				want := action.Block
				if f.RuleName == "berlin" {
					want = action.Approve
				}
				if f.Level != want {
					t.Errorf("%s: level %s, want %s", f.RuleName, f.Level, want)
				}
			}
		})
	}
	// Another tool is not touched.
	if fs := set.Check(call("a", "Read", action.KindFileRead, nil), Env{Now: t0}); len(fs) != 0 {
		t.Errorf("file_read fired %v", fs)
	}
}

func TestPatternAndPriority(t *testing.T) {
	approve := mustRule(t, `{"name":"ok ls","priority":5,"trigger":{"type":"pattern_match","tool":"shell","regex":"^\\{\"command\":\"ls( |\")"},"action":{"type":"auto_approve"}}`)
	secret := mustRule(t, `{"name":"secret","priority":1,"trigger":{"type":"pattern_match","text":"PRODUCTION"},"action":{"type":"require_approval","level":"confirm"}}`)
	set, err := Compile([]Rule{approve, secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := set.Check(call("a", "Bash", action.KindShell, map[string]any{"command": "ls -la /srv/production"}), Env{Now: t0})
	if len(fs) != 2 || fs[0].RuleName != "secret" || fs[1].RuleName != "ok ls" {
		t.Fatalf("findings %+v, want secret then ok ls", fs)
	}
	if fs[0].Level != action.Confirm || !fs[1].Loosens || fs[1].Level != action.Auto {
		t.Errorf("levels: %+v", fs)
	}
	if fs := set.Check(call("a", "Bash", action.KindShell, map[string]any{"command": "lsof"}), Env{Now: t0}); len(fs) != 0 {
		t.Errorf("lsof fired %+v", fs)
	}
}

func TestCountThresholdAndHold(t *testing.T) {
	r := mustRule(t, `{"name":"burst","trigger":{"type":"count_threshold","tool":"file_write","count":3,"window_minutes":5},"action":{"type":"block_tool","duration_minutes":60}}`)
	set, err := Compile([]Rule{r}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, h := NewCounters(time.Hour), NewHolds()
	env := Env{Now: t0, Counters: c, Holds: h}
	w := call("a", "Write", action.KindFileWrite, nil)
	for i := 1; i <= 3; i++ {
		if fs := set.Check(w, env); len(fs) != 0 {
			t.Fatalf("call %d fired %+v", i, fs)
		}
		c.Add(t0, Sample{Seq: int64(i), At: t0, Agent: "a", Tool: "Write", Kind: "file_write", Call: true})
	}
	// Another agent's calls are its own.
	if fs := set.Check(call("b", "Write", action.KindFileWrite, nil), env); len(fs) != 0 {
		t.Fatalf("agent b fired %+v", fs)
	}
	fs := set.Check(w, env)
	if len(fs) != 1 || fs[0].Level != action.Block || !fs[0].HoldUntil.Equal(t0.Add(time.Hour)) {
		t.Fatalf("4th call: %+v", fs)
	}
	// Feeding the same records again counts them once.
	c.Add(t0, Sample{Seq: 2, At: t0, Agent: "a", Tool: "Write", Kind: "file_write", Call: true})
	if n := c.Calls("a", t0.Add(-time.Minute), matcher{}); n != 3 {
		t.Fatalf("calls = %d, want 3", n)
	}
	h.Set(r.ID, "a", fs[0].HoldUntil)
	later := Env{Now: t0.Add(30 * time.Minute), Counters: c, Holds: h}
	c.Add(later.Now) // the window has passed
	fs = set.Check(w, later)
	if len(fs) != 1 || !fs[0].Held || fs[0].Level != action.Block {
		t.Fatalf("within the hold: %+v", fs)
	}
	if fs := set.Check(w, Env{Now: t0.Add(61 * time.Minute), Counters: c, Holds: h}); len(fs) != 0 {
		t.Fatalf("after the hold: %+v", fs)
	}
}

func TestErrorRateAndCost(t *testing.T) {
	er := mustRule(t, `{"name":"errors","trigger":{"type":"error_rate","percent":50,"min_calls":4,"window_minutes":10},"action":{"type":"pause_agent"}}`)
	cost := mustRule(t, `{"name":"cost","trigger":{"type":"cost_threshold","usd":2.5,"window_minutes":60},"action":{"type":"notify","channels":["ntfy"]}}`)
	set, err := Compile([]Rule{er, cost}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCounters(2 * time.Hour)
	spend := usage.NewCounter(nil) // the budget store's record
	env := Env{Now: t0, Counters: c, Spend: spend}
	add := func(seq int64, failed bool) {
		c.Add(t0, Sample{Seq: seq, At: t0, Agent: "a", Tool: "Bash", Kind: "shell", Result: true, Failed: failed})
	}
	add(1, true)
	add(2, true)
	add(3, false)
	a := call("a", "Bash", action.KindShell, nil)
	if fs := set.Check(a, env); len(fs) != 0 {
		t.Fatalf("3 results fired %+v", fs)
	}
	add(4, false)
	fs := set.Check(a, env)
	if len(fs) != 1 || !fs[0].Stop || fs[0].Level != action.Block {
		t.Fatalf("2 of 4 failed: %+v", fs)
	}
	spend.Record("a", "s1", usage.Spend{Cost: 2.0}, t0.Add(-61*time.Minute)) // out of the window
	spend.Record("b", "s2", usage.Spend{Cost: 2.0}, t0)                      // another agent's
	spend.Record("a", "s1", usage.Spend{Cost: 2.0}, t0.Add(-30*time.Minute))
	if fs := set.Check(a, env); len(fs) != 1 {
		t.Fatalf("$2 within the hour fired %+v", fs)
	}
	spend.Record("a", "s3", usage.Spend{Cost: 0.5}, t0)
	fs = set.Check(a, env)
	// Same priority: by id ("r-cost" before "r-errors").
	if len(fs) != 2 || fs[0].RuleName != "cost" || fs[0].Level != action.Notify || fs[0].Channels[0] != "ntfy" || fs[1].RuleName != "errors" {
		t.Fatalf("cost: %+v", fs)
	}
	// Without the spend record a cost trigger cannot fire.
	if fs := set.Check(a, Env{Now: t0, Counters: c}); len(fs) != 1 || fs[0].RuleName != "errors" {
		t.Fatalf("without spend: %+v", fs)
	}
}

func TestAnomaly(t *testing.T) {
	r, err := DecodeAnomalyRule([]byte(`{"name":"write burst","tool_name":"file_write","threshold_count":5,"window_seconds":60,"baseline_multiplier":3}`))
	if err != nil {
		t.Fatal(err)
	}
	r.ID = "an1"
	if r.Action != AnomalyStopRollback || r.RollbackDepth() != DefaultRollback || !r.Enabled {
		t.Fatalf("defaults: %+v", r)
	}
	set, err := Compile(nil, []AnomalyRule{r})
	if err != nil {
		t.Fatal(err)
	}
	c, h := NewCounters(time.Hour), NewHolds()
	baseline := 0.5
	env := Env{Now: t0, Counters: c, Holds: h, Baseline: func(string, *AnomalyRule) (float64, bool) { return baseline, true }}
	w := call("a", "Write", action.KindFileWrite, nil)
	for i := 1; i <= 4; i++ {
		if fs := set.Check(w, env); len(fs) != 0 {
			t.Fatalf("call %d: %+v", i, fs)
		}
		c.Add(t0, Sample{Seq: int64(i), At: t0.Add(-time.Duration(i) * time.Second), Agent: "a", Tool: "Write", Kind: "file_write", Call: true})
	}
	fs := set.Check(w, env)
	if len(fs) != 1 || !fs[0].Anomaly || !fs[0].Stop || fs[0].Count != 5 || fs[0].Baseline != 0.5 {
		t.Fatalf("5th write: %+v", fs)
	}
	// A busy agent whose usual rate is as high is not an anomaly.
	baseline = 4
	if fs := set.Check(w, env); len(fs) != 0 {
		t.Fatalf("usual rate: %+v", fs)
	}
	baseline = 0.5
	h.Set("an1", "a", t0.Add(time.Minute))
	if fs := set.Check(w, env); len(fs) != 0 {
		t.Fatalf("held anomaly fired again: %+v", fs)
	}
	// Out of the window.
	if fs := set.Check(w, Env{Now: t0.Add(2 * time.Minute), Counters: c}); len(fs) != 0 {
		t.Fatalf("after the window: %+v", fs)
	}
}

func TestTemplatesValidate(t *testing.T) {
	for _, tp := range Templates() {
		for i, r := range tp.Rules {
			b, _ := json.Marshal(r)
			if _, err := DecodeRule(b); err != nil {
				t.Errorf("%s rule %d: %v", tp.Name, i, err)
			}
		}
	}
}
