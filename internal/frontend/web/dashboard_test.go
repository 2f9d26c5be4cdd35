package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"rsc.io/qr"

	"github.com/overseer-dev/overseer/internal/store"
)

func TestDashboard(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	answer := func(apr *store.Approval, decision string, after time.Duration) {
		e.clk.Advance(after)
		if _, _, err := e.k.Answer(ctx, apr.ID, store.Answer{Decision: decision, Who: "ann", Channel: "web"}); err != nil {
			t.Fatal(err)
		}
	}
	// Day 1: two deploys approved after 10s and 30s; one asked twice.
	a1 := e.submit("deploy", map[string]any{"target": "prod"})
	answer(a1, "approve", 10*time.Second)
	a2 := e.submit("deploy", map[string]any{"target": "prod"})
	answer(a2, "approve", 30*time.Second)
	answer(a2, "deny", time.Second) // late: recorded only
	e.clk.Advance(24 * time.Hour)
	// Day 2: a tool with markup in its name is denied three times, which
	// escalates it.
	for i := 0; i < 3; i++ {
		apr := e.submit("evil<script>", map[string]any{"n": i})
		answer(apr, "deny", 5*time.Second)
	}

	d, err := BuildDashboard(ctx, e.k.Store, e.clk.Now(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if d.Bucket != "day" || len(d.Levels) != 7 {
		t.Fatalf("buckets %s × %d", d.Bucket, len(d.Levels))
	}
	if got := d.Levels[5].Counts["approve"]; got != 2 {
		t.Errorf("day 1 approve verdicts %d, want 2 (%v)", got, d.Levels)
	}
	if got := d.Levels[6].Counts["confirm"]; got != 3 {
		t.Errorf("day 2 confirm verdicts %d, want 3 (%v)", got, d.Levels)
	}
	want := Totals{Actions: 5, Asked: 5, Approved: 2, Denied: 3}
	if d.Totals != want {
		t.Errorf("totals %+v, want %+v", d.Totals, want)
	}
	tools := map[string]ToolAnswers{}
	for _, ta := range d.Tools {
		tools[ta.Tool] = ta
	}
	if dep := tools["deploy"]; dep.Approved != 2 || dep.Denied != 0 || dep.MedianMS != 30000 || dep.P90MS != 30000 {
		t.Errorf("deploy %+v", dep)
	}
	if ev := tools["evil<script>"]; ev.Denied != 3 || ev.MedianMS != 5000 {
		t.Errorf("evil %+v", ev)
	}
	if len(d.Frequent) == 0 || d.Frequent[0].Tool != "deploy" || d.Frequent[0].Count != 2 || d.Frequent[0].Approved != 2 {
		t.Errorf("frequent %+v", d.Frequent)
	}
	if len(d.Escalated) != 1 || d.Escalated[0].Tool != "evil<script>" || d.Escalated[0].After != "approve" {
		t.Errorf("escalated %+v", d.Escalated)
	}

	for name, svg := range map[string]string{"levels": LevelsChart(d), "answers": AnswersChart(d),
		"latency": LatencyChart(d), "prompts": PromptsChart(d)} {
		t.Run(name, func(t *testing.T) {
			if !strings.HasPrefix(svg, "<svg ") || !strings.HasSuffix(svg, "</svg>") {
				t.Fatalf("not an SVG document: %.80s", svg)
			}
			if strings.Contains(svg, "<script") {
				t.Fatalf("unescaped markup from a tool name: %s", svg)
			}
		})
	}
	if !strings.Contains(AnswersChart(d), "evil&lt;script&gt;") {
		t.Error("the answers chart lacks the escaped tool name")
	}
	if !strings.Contains(LatencyChart(d), "median 30s") {
		t.Error("the latency chart lacks deploy's median")
	}

	t.Run("an empty period", func(t *testing.T) {
		d, err := BuildDashboard(ctx, e.k.Store, t0.Add(-30*24*time.Hour), 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Bucket != "hour" || d.Totals != (Totals{}) {
			t.Fatalf("%+v", d)
		}
		if !strings.Contains(LevelsChart(d), "No actions") || !strings.Contains(AnswersChart(d), "No answers") {
			t.Fatal("empty charts do not say so")
		}
	})
	t.Run("served to a session only", func(t *testing.T) {
		b := e.newBrowser()
		if st, _ := b.get("/ui/charts/levels.svg"); st != 401 {
			t.Fatalf("%d", st)
		}
		b.login()
		st, body := b.get("/ui/api/dashboard?days=7")
		if st != 200 || !strings.Contains(string(body), `"approved":2`) {
			t.Fatalf("%d %s", st, body)
		}
	})
}

func TestTerminalQR(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		ansi       bool
	}{
		{"loopback", "http://127.0.0.1:7777/ui/", false},
		{"network with colours", "https://192.168.1.20:7777/ui/", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := TerminalQR(tc.text, tc.ansi)
			if err != nil {
				t.Fatal(err)
			}
			code, _ := qr.Encode(tc.text, qr.M)
			if tc.ansi != strings.Contains(out, "\x1b[") {
				t.Fatalf("ansi=%v but colours present=%v", tc.ansi, !tc.ansi)
			}
			out = strings.NewReplacer("\x1b[97;40m", "", "\x1b[0m", "").Replace(out)
			rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			const quiet = 2
			n := code.Size + 2*quiet
			if len(rows) != (n+1)/2 {
				t.Fatalf("%d rows for %d modules", len(rows), n)
			}
			// Read the modules back and compare with the code.
			for ry, row := range rows {
				cells := []rune(row)
				if len(cells) != n {
					t.Fatalf("row %d has %d cells, want %d", ry, len(cells), n)
				}
				for x, c := range cells {
					top := c == '█' || c == '▀'
					bottom := c == '█' || c == '▄'
					for i, light := range []bool{top, bottom} {
						y := 2*ry + i
						if y >= n {
							continue
						}
						mx, my := x-quiet, y-quiet
						want := mx < 0 || my < 0 || mx >= code.Size || my >= code.Size || !code.Black(mx, my)
						if light != want {
							t.Fatalf("module (%d,%d): light=%v, want %v", mx, my, light, want)
						}
					}
				}
			}
		})
	}
}
