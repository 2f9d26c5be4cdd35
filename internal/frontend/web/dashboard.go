package web

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/store"
)

// Dashboard is the risk dashboard's data over a window of time.
type Dashboard struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Bucket string    `json:"bucket"` // hour or day
	// Levels counts verdicts per level in each bucket, oldest first.
	Levels []LevelBucket `json:"levels"`
	// Tools are the answers per tool, most answered first.
	Tools []ToolAnswers `json:"tools"`
	// Escalated are the adaptive layer's changes in the window, newest first.
	Escalated []Escalation `json:"escalated"`
	// Frequent are the calls put to a person most often: candidates for a rule.
	Frequent []Prompt `json:"frequent"`
	Totals   Totals   `json:"totals"`
	// Truncated is true when the window held more records than were read.
	Truncated bool `json:"truncated,omitempty"`
}

// LevelBucket counts verdicts by level in one bucket of time.
type LevelBucket struct {
	Start  time.Time      `json:"start"`
	Counts map[string]int `json:"counts"`
}

// ToolAnswers are a tool's answers and how long people took.
type ToolAnswers struct {
	Tool      string `json:"tool"`
	Approved  int    `json:"approved"`
	Denied    int    `json:"denied"`
	Aborted   int    `json:"aborted"`
	TimedOut  int    `json:"timed_out"`
	MedianMS  int64  `json:"median_answer_ms"`
	P90MS     int64  `json:"p90_answer_ms"`
	durations []time.Duration
}

// Answered is the number of answers people gave (not the timeouts).
func (t ToolAnswers) Answered() int { return t.Approved + t.Denied + t.Aborted }

// Escalation is one change the adaptive layer made.
type Escalation struct {
	Tool   string    `json:"tool"`
	At     time.Time `json:"at"`
	Before string    `json:"before,omitempty"`
	After  string    `json:"after,omitempty"`
	Op     string    `json:"op"`
	Reason string    `json:"reason"`
	RuleID string    `json:"rule_id"`
}

// Prompt is a call that was put to a person, with how often and how it went.
type Prompt struct {
	Tool     string `json:"tool"`
	Summary  string `json:"summary"`
	ArgsHash string `json:"args_hash"`
	Count    int    `json:"count"`
	Approved int    `json:"approved"`
	Denied   int    `json:"denied"`
}

// Totals are the window's totals.
type Totals struct {
	Actions  int `json:"actions"`
	Asked    int `json:"asked"`
	Approved int `json:"approved"`
	Denied   int `json:"denied"`
	Blocked  int `json:"blocked"`
	TimedOut int `json:"timed_out"`
}

// maxDashboardRecords caps the records one dashboard reads.
const maxDashboardRecords = 50000

// dashLevels are the levels charted, in order.
var dashLevels = []action.Level{action.Auto, action.Notify, action.Confirm, action.Approve, action.Block}

// BuildDashboard computes the dashboard for the days before now from the
// audit log.
func BuildDashboard(ctx context.Context, st store.AuditStore, now time.Time, days int) (*Dashboard, error) {
	if days <= 0 {
		days = 7
	}
	d := &Dashboard{To: now, Bucket: "day"}
	step := 24 * time.Hour
	loc := now.Location()
	if days <= 2 {
		d.Bucket, step = "hour", time.Hour
		d.From = now.Add(-time.Duration(days) * 24 * time.Hour).Truncate(time.Hour)
	} else {
		y, m, dd := now.AddDate(0, 0, -(days - 1)).Date()
		d.From = time.Date(y, m, dd, 0, 0, 0, 0, loc)
	}
	recs, err := st.QueryAudit(ctx, store.AuditQuery{Since: d.From, Until: now.Add(time.Millisecond), Limit: maxDashboardRecords,
		Types: []string{audit.TypeVerdict, audit.TypeApprovalRequest, audit.TypeAnswer, audit.TypePolicyChange}})
	if err != nil {
		return nil, fmt.Errorf("web: dashboard: %w", err)
	}
	d.Truncated = len(recs) >= maxDashboardRecords

	// Buckets.
	var starts []time.Time
	for t := d.From; !t.After(now); {
		starts = append(starts, t)
		if d.Bucket == "hour" {
			t = t.Add(step)
		} else {
			t = t.AddDate(0, 0, 1)
		}
	}
	d.Levels = make([]LevelBucket, len(starts))
	for i, s := range starts {
		d.Levels[i] = LevelBucket{Start: s, Counts: map[string]int{}}
	}
	bucketOf := func(t time.Time) int {
		i := sort.Search(len(starts), func(i int) bool { return starts[i].After(t) }) - 1
		return i
	}

	created := map[string]time.Time{}
	decided := map[string]bool{} // approvals whose deciding answer was counted
	prompts := map[string]*Prompt{}
	promptOf := map[string]*Prompt{} // approval id → prompt
	tools := map[string]*ToolAnswers{}
	tool := func(name string) *ToolAnswers {
		t := tools[name]
		if t == nil {
			t = &ToolAnswers{Tool: name}
			tools[name] = t
		}
		return t
	}
	for _, rec := range recs {
		switch rec.Type {
		case audit.TypeVerdict:
			var v action.Verdict
			if json.Unmarshal(rec.Data, &v) != nil {
				continue
			}
			d.Totals.Actions++
			if v.Level == action.Block {
				d.Totals.Blocked++
			}
			if i := bucketOf(rec.Time.In(loc)); i >= 0 {
				d.Levels[i].Counts[v.Level.OrStrict().String()]++
			}
		case audit.TypeApprovalRequest:
			var apr store.Approval
			if json.Unmarshal(rec.Data, &apr) != nil {
				continue
			}
			d.Totals.Asked++
			created[apr.ID] = apr.CreatedAt
			key := apr.Tool + "\x00" + apr.ArgsHash
			p := prompts[key]
			if p == nil {
				p = &Prompt{Tool: apr.Tool, Summary: actionLine(&apr.Action), ArgsHash: apr.ArgsHash}
				prompts[key] = p
			}
			p.Count++
			promptOf[apr.ID] = p
		case audit.TypeAnswer:
			var ar struct {
				ApprovalID string               `json:"approval_id"`
				Status     store.ApprovalStatus `json:"status"`
				Answer     store.Answer         `json:"answer"`
			}
			if json.Unmarshal(rec.Data, &ar) != nil || !answerApplied(ar.Status, ar.Answer) || decided[ar.ApprovalID] {
				continue
			}
			decided[ar.ApprovalID] = true
			if ar.Answer.Who == gate.WithdrawnActor {
				continue // nobody answered: neither an approval nor a refusal
			}
			t := tool(rec.Tool)
			if ar.Answer.Who == gate.TimeoutActor {
				t.TimedOut++
				d.Totals.TimedOut++
				continue
			}
			switch ar.Answer.Decision {
			case gate.DecisionApprove:
				t.Approved++
				d.Totals.Approved++
			case gate.DecisionAbort:
				t.Aborted++
				d.Totals.Denied++
			default:
				t.Denied++
				d.Totals.Denied++
			}
			if p := promptOf[ar.ApprovalID]; p != nil {
				if ar.Answer.Decision == gate.DecisionApprove {
					p.Approved++
				} else {
					p.Denied++
				}
			}
			if c, ok := created[ar.ApprovalID]; ok && !ar.Answer.At.IsZero() && !ar.Answer.At.Before(c) {
				t.durations = append(t.durations, ar.Answer.At.Sub(c))
			}
		case audit.TypePolicyChange:
			var pc struct {
				Origin string       `json:"origin"`
				Tool   string       `json:"tool"`
				Before action.Level `json:"before"`
				After  action.Level `json:"after"`
				Reason string       `json:"reason"`
				RuleID string       `json:"rule_id"`
				Op     string       `json:"op"`
			}
			if json.Unmarshal(rec.Data, &pc) != nil || pc.Origin != "adaptive" {
				continue
			}
			e := Escalation{Tool: pc.Tool, At: rec.Time, Op: pc.Op, Reason: pc.Reason, RuleID: pc.RuleID}
			if pc.Before != action.Unset {
				e.Before = pc.Before.String()
			}
			if pc.After != action.Unset {
				e.After = pc.After.String()
			}
			d.Escalated = append([]Escalation{e}, d.Escalated...)
		}
	}
	for _, t := range tools {
		sort.Slice(t.durations, func(i, j int) bool { return t.durations[i] < t.durations[j] })
		if n := len(t.durations); n > 0 {
			t.MedianMS = t.durations[n/2].Milliseconds()
			t.P90MS = t.durations[min(n-1, (n*9)/10)].Milliseconds()
		}
		d.Tools = append(d.Tools, *t)
	}
	sort.Slice(d.Tools, func(i, j int) bool {
		a, b := d.Tools[i], d.Tools[j]
		if a.Answered()+a.TimedOut != b.Answered()+b.TimedOut {
			return a.Answered()+a.TimedOut > b.Answered()+b.TimedOut
		}
		return a.Tool < b.Tool
	})
	for _, p := range prompts {
		d.Frequent = append(d.Frequent, *p)
	}
	sort.Slice(d.Frequent, func(i, j int) bool {
		if d.Frequent[i].Count != d.Frequent[j].Count {
			return d.Frequent[i].Count > d.Frequent[j].Count
		}
		return d.Frequent[i].Summary < d.Frequent[j].Summary
	})
	if len(d.Frequent) > 10 {
		d.Frequent = d.Frequent[:10]
	}
	if d.Tools == nil {
		d.Tools = []ToolAnswers{}
	}
	if d.Frequent == nil {
		d.Frequent = []Prompt{}
	}
	if d.Escalated == nil {
		d.Escalated = []Escalation{}
	}
	return d, nil
}

func daysParam(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("days"))
	if err != nil || n <= 0 {
		return 7
	}
	return min(n, 90)
}

func (c *Console) apiDashboard(w http.ResponseWriter, r *http.Request, _ *session) {
	d, err := BuildDashboard(r.Context(), c.k.Store, c.clk.Now(), daysParam(r))
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// chart serves one of the dashboard's charts as SVG.
func (c *Console) chart(w http.ResponseWriter, r *http.Request, _ *session) {
	d, err := BuildDashboard(r.Context(), c.k.Store, c.clk.Now(), daysParam(r))
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	var svg string
	switch r.PathValue("name") {
	case "levels.svg":
		svg = LevelsChart(d)
	case "answers.svg":
		svg = AnswersChart(d)
	case "latency.svg":
		svg = LatencyChart(d)
	case "prompts.svg":
		svg = PromptsChart(d)
	default:
		writeErr(w, http.StatusNotFound, "not_found", "no such chart")
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = w.Write([]byte(svg))
}

// Chart colours, one per level and per answer.
var levelColors = map[string]string{
	"auto": "#7fb77e", "notify": "#4e9ad6", "confirm": "#e8b339", "approve": "#e07b39", "block": "#c8453c",
}

const (
	colApproved = "#3f9a57"
	colDenied   = "#c8453c"
	colAborted  = "#8a4fbf"
	colTimeout  = "#9aa0a6"
	colText     = "#444"
	colGrid     = "#e3e3e3"
)

// svgDoc accumulates an SVG document. Every text it writes is escaped.
type svgDoc struct {
	sb   strings.Builder
	w, h int
}

func newSVG(w, h int, title string) *svgDoc {
	s := &svgDoc{w: w, h: h}
	fmt.Fprintf(&s.sb, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" font-family="system-ui, sans-serif" font-size="12">`, w, h, w, h)
	fmt.Fprintf(&s.sb, `<title>%s</title><rect width="%d" height="%d" fill="#fff"/>`, html.EscapeString(title), w, h)
	return s
}

func (s *svgDoc) rect(x, y, w, h float64, fill, title string) {
	if w <= 0 || h <= 0 {
		return
	}
	fmt.Fprintf(&s.sb, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s">`, x, y, w, h, fill)
	if title != "" {
		fmt.Fprintf(&s.sb, `<title>%s</title>`, html.EscapeString(title))
	}
	s.sb.WriteString(`</rect>`)
}

func (s *svgDoc) text(x, y float64, anchor, fill, text string) {
	fmt.Fprintf(&s.sb, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="%s">%s</text>`, x, y, anchor, fill, html.EscapeString(text))
}

func (s *svgDoc) line(x1, y1, x2, y2 float64, stroke string) {
	fmt.Fprintf(&s.sb, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x1, y1, x2, y2, stroke)
}

func (s *svgDoc) String() string { return s.sb.String() + "</svg>" }

func (s *svgDoc) empty(msg string) string {
	s.text(float64(s.w)/2, float64(s.h)/2, "middle", colText, msg)
	return s.String()
}

// legend draws coloured keys in a row from x at y.
func (s *svgDoc) legend(x, y float64, keys []string, colors []string) {
	for i, k := range keys {
		s.rect(x, y-9, 10, 10, colors[i], "")
		s.text(x+14, y, "start", colText, k)
		x += 22 + float64(7*len(k))
	}
}

// niceMax rounds a maximum up to a readable axis value.
func niceMax(v int) int {
	if v <= 5 {
		return max(v, 1)
	}
	for _, m := range []int{10, 20, 25, 50} {
		if v <= m {
			return m
		}
	}
	p := 100
	for v > p*10 {
		p *= 10
	}
	for _, f := range []int{1, 2, 5, 10} {
		if v <= p*f {
			return p * f
		}
	}
	return v
}

// LevelsChart draws verdicts per level over time as stacked bars.
func LevelsChart(d *Dashboard) string {
	const w, h, left, right, top, bottom = 720, 260, 40, 10, 30, 40
	s := newSVG(w, h, "Actions per level over time")
	names := make([]string, len(dashLevels))
	colors := make([]string, len(dashLevels))
	for i, l := range dashLevels {
		names[i], colors[i] = l.String(), levelColors[l.String()]
	}
	s.legend(left, 16, names, colors)
	peak := 0
	for _, b := range d.Levels {
		n := 0
		for _, c := range b.Counts {
			n += c
		}
		peak = max(peak, n)
	}
	if peak == 0 || len(d.Levels) == 0 {
		return s.empty("No actions in this period")
	}
	top2 := (niceMax(peak) + 3) / 4 * 4 // four even steps
	plotH := float64(h - top - bottom)
	plotW := float64(w - left - right)
	for i := 0; i <= 4; i++ {
		y := float64(top) + plotH - plotH*float64(i)/4
		s.line(left, y, float64(w-right), y, colGrid)
		s.text(left-4, y+4, "end", colText, strconv.Itoa(top2*i/4))
	}
	bw := plotW / float64(len(d.Levels))
	labelEvery := max(1, len(d.Levels)/12)
	for i, b := range d.Levels {
		x := float64(left) + float64(i)*bw
		y := float64(top) + plotH
		for _, l := range dashLevels {
			n := b.Counts[l.String()]
			if n == 0 {
				continue
			}
			bh := plotH * float64(n) / float64(top2)
			y -= bh
			s.rect(x+bw*0.15, y, bw*0.7, bh, levelColors[l.String()], fmt.Sprintf("%s: %d %s", label(b.Start, d.Bucket), n, l))
		}
		if i%labelEvery == 0 {
			s.text(x+bw/2, float64(h-bottom+16), "middle", colText, label(b.Start, d.Bucket))
		}
	}
	return s.String()
}

func label(t time.Time, bucket string) string {
	if bucket == "hour" {
		return t.Format("15:04")
	}
	return t.Format("Jan 2")
}

// hbars draws labelled horizontal stacked bars.
type hbar struct {
	label  string
	parts  []int
	titles []string
	note   string
}

func hbarChart(title string, keys, colors []string, bars []hbar, emptyMsg string) string {
	const w, left, right, rowH, top = 720, 190, 170, 26, 34
	h := top + rowH*max(len(bars), 1) + 10
	s := newSVG(w, h, title)
	s.legend(10, 16, keys, colors)
	if len(bars) == 0 {
		return s.empty(emptyMsg)
	}
	peak := 0
	for _, b := range bars {
		n := 0
		for _, p := range b.parts {
			n += p
		}
		peak = max(peak, n)
	}
	if peak == 0 {
		return s.empty(emptyMsg)
	}
	plotW := float64(w - left - right)
	for i, b := range bars {
		y := float64(top + i*rowH)
		s.text(left-8, y+15, "end", colText, oneLine(b.label, 30))
		x := float64(left)
		for j, p := range b.parts {
			bw := plotW * float64(p) / float64(peak)
			t := ""
			if j < len(b.titles) {
				t = b.titles[j]
			}
			s.rect(x, y+3, bw, rowH-8, colors[j], t)
			x += bw
		}
		s.text(x+6, y+15, "start", colText, b.note)
	}
	return s.String()
}

// AnswersChart draws approvals, rejections and timeouts per tool.
func AnswersChart(d *Dashboard) string {
	var bars []hbar
	for _, t := range d.Tools {
		if len(bars) == 12 {
			break
		}
		n := t.Answered() + t.TimedOut
		note := fmt.Sprintf("%d", n)
		if t.Answered() > 0 {
			note = fmt.Sprintf("%d · %d%% approved", n, 100*t.Approved/t.Answered())
		}
		bars = append(bars, hbar{label: t.Tool, parts: []int{t.Approved, t.Denied, t.Aborted, t.TimedOut},
			titles: []string{
				fmt.Sprintf("%s: %d approved", t.Tool, t.Approved), fmt.Sprintf("%s: %d denied", t.Tool, t.Denied),
				fmt.Sprintf("%s: %d aborted", t.Tool, t.Aborted), fmt.Sprintf("%s: %d timed out", t.Tool, t.TimedOut)},
			note: note})
	}
	return hbarChart("Approval and rejection per tool", []string{"approved", "denied", "aborted", "timed out"},
		[]string{colApproved, colDenied, colAborted, colTimeout}, bars, "No answers in this period")
}

// LatencyChart draws the median time to answer per tool (p90 in the note).
func LatencyChart(d *Dashboard) string {
	var bars []hbar
	for _, t := range d.Tools {
		if len(bars) == 12 {
			break
		}
		if t.MedianMS == 0 && t.P90MS == 0 {
			continue
		}
		med := time.Duration(t.MedianMS) * time.Millisecond
		p90 := time.Duration(t.P90MS) * time.Millisecond
		bars = append(bars, hbar{label: t.Tool, parts: []int{int(t.MedianMS), int(max(0, t.P90MS-t.MedianMS))},
			titles: []string{fmt.Sprintf("%s: median %s", t.Tool, short(med)), fmt.Sprintf("%s: p90 %s", t.Tool, short(p90))},
			note:   fmt.Sprintf("median %s · p90 %s", short(med), short(p90))})
	}
	return hbarChart("Time to answer per tool", []string{"median", "to p90"}, []string{"#4e9ad6", "#b9d5ee"}, bars,
		"No answers in this period")
}

// PromptsChart draws the calls put to a person most often.
func PromptsChart(d *Dashboard) string {
	var bars []hbar
	for _, p := range d.Frequent {
		other := p.Count - p.Approved - p.Denied
		bars = append(bars, hbar{label: p.Summary, parts: []int{p.Approved, p.Denied, max(0, other)},
			titles: []string{fmt.Sprintf("%d approved", p.Approved), fmt.Sprintf("%d denied", p.Denied),
				fmt.Sprintf("%d unanswered or timed out", max(0, other))},
			note: fmt.Sprintf("asked %d×", p.Count)})
	}
	return hbarChart("Most frequent prompts", []string{"approved", "denied", "other"},
		[]string{colApproved, colDenied, colTimeout}, bars, "Nothing was put to a person in this period")
}

func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}
