package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// State is what a watched pane is doing, as the panes view shows it.
type State string

// The states of a pane.
const (
	StateWorking  State = "working"           // no prompt on screen
	StateJudging  State = "judging"           // a prompt is being judged
	StateWaiting  State = "waiting"           // waiting for a person's answer
	StateAnswered State = "answered"          // the watcher answered the last prompt
	StateLeft     State = "left for a person" // the prompt is for the person at the terminal
	StateAlert    State = "alert"             // keys were sent but the prompt stayed, or a check failed
)

// PaneView is one watched pane for the panes view.
type PaneView struct {
	ID     string `json:"id"`
	Target string `json:"target"`
	Agent  string `json:"agent,omitempty"`
	// Session is the session of the calls judged for this pane
	// ("tmux/<session>/<pane id>"): a person finds a waiting pane's
	// request by it.
	Session string `json:"session,omitempty"`
	// ActionID is the call a pane waits on (while judging or waiting): its
	// request in the queue is the approval of this action.
	ActionID string    `json:"action_id,omitempty"`
	State    State     `json:"state"`
	Prompt   string    `json:"prompt,omitempty"` // the last prompt's question
	Tool     string    `json:"tool,omitempty"`
	Args     string    `json:"args,omitempty"` // the last prompt's extracted call, shortened
	Answer   string    `json:"answer,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Since    time.Time `json:"since"`
}

// Watcher watches the panes of a tmux server and answers the prompts it
// recognises as the firewall rules. Run owns all its state; judgements run
// in their own goroutines and report back to Run.
type Watcher struct {
	Tmux *Tmux
	// Session limits the watcher to one session ("" watches all).
	Session string
	// Panes limits it to these pane ids or targets (empty: all).
	Only []string
	// Interval between captures (default 1s).
	Interval time.Duration
	Set      *Set
	Judge    Judge
	// MinGap is the least time between two answers in one pane (default
	// 2s): a pane that keeps drawing prompts is not answered in a burst.
	MinGap time.Duration
	// AlertAfter is how long a prompt may stay on screen after its answer
	// was typed before the watcher raises an alert (default 3s).
	AlertAfter time.Duration
	// Logf reports what the watcher does (nil: nothing).
	Logf func(format string, args ...any)
	// Now defaults to time.Now.
	Now func() time.Time
	// Publish, when set, receives the panes view after every capture.
	Publish func(views []PaneView)

	recheckSoon bool

	mu      sync.Mutex
	views   map[string]PaneView
	panes   map[string]*paneState
	results chan judged
}

type paneState struct {
	key     string // the prompt on screen (Prompt.Key), "" for none
	stable  int    // captures in a row showing it
	handled string // the prompt already judged (not judged twice)
	// judging: a judgement of the prompt judgingKey is under way.
	judging    context.CancelFunc
	judgingKey string
	judgeStart time.Time
	// sentKey: keys were typed for this prompt at sent.
	sentKey    string
	sent       time.Time
	alerted    bool
	lastAnswer time.Time
}

type judged struct {
	pane   Capture
	prompt *Prompt
	ruling Ruling
	err    error
}

func (w *Watcher) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Watcher) logf(format string, args ...any) {
	if w.Logf != nil {
		w.Logf(format, args...)
	}
}

func (w *Watcher) init() {
	if w.panes == nil {
		w.panes = map[string]*paneState{}
		w.views = map[string]PaneView{}
		w.results = make(chan judged, 16)
	}
	if w.Interval <= 0 {
		w.Interval = time.Second
	}
	if w.MinGap <= 0 {
		w.MinGap = 2 * time.Second
	}
	if w.AlertAfter <= 0 {
		w.AlertAfter = 3 * time.Second
	}
}

// Run watches until ctx ends. A failing capture is reported and retried;
// it never leads to keys being typed.
func (w *Watcher) Run(ctx context.Context) error {
	w.init()
	defer w.stopAll()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-w.results:
			w.settle(ctx, r)
			continue
		case <-t.C:
		}
		start := w.now()
		if err := w.Tick(ctx); err != nil && ctx.Err() == nil {
			w.logf("capture failed: %v", err)
		}
		// A prompt seen once is captured again soon, to confirm it is
		// stable without waiting a whole interval.
		next := w.Interval
		if w.recheckSoon {
			next = min(next, recheckAfter)
		}
		t.Reset(max(next-w.now().Sub(start), 0))
	}
}

// recheckAfter is how soon a newly seen prompt is captured again.
const recheckAfter = 250 * time.Millisecond

func (w *Watcher) stopAll() {
	for _, st := range w.panes {
		if st.judging != nil {
			st.judging()
		}
	}
}

// Views returns the watched panes for the panes view.
func (w *Watcher) Views() []PaneView {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]PaneView, 0, len(w.views))
	for _, v := range w.views {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b PaneView) int { return strings.Compare(a.Target, b.Target) })
	return out
}

func (w *Watcher) setView(c Capture, f func(v *PaneView)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.views[c.ID]
	if !ok {
		v = PaneView{ID: c.ID, State: StateWorking, Since: w.now()}
	}
	v.Target = c.Target
	old := v.State
	f(&v)
	if v.State != old {
		v.Since = w.now()
	}
	w.views[c.ID] = v
}

func (w *Watcher) watched(p Pane) bool {
	if p.Dead {
		return false
	}
	return len(w.Only) == 0 || slices.Contains(w.Only, p.ID) || slices.Contains(w.Only, p.Target)
}

// Tick captures every watched pane once and acts on what it sees; results
// of judgements that are ready are settled first.
func (w *Watcher) Tick(ctx context.Context) error {
	w.init()
	for {
		select {
		case r := <-w.results:
			w.settle(ctx, r)
			continue
		default:
		}
		break
	}
	all, err := w.Tmux.Panes(ctx, w.Session)
	if err != nil {
		return err
	}
	var panes []Pane
	for _, p := range all {
		if w.watched(p) {
			panes = append(panes, p)
		}
	}
	caps, err := w.Tmux.Capture(ctx, panes)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	w.recheckSoon = false
	for _, c := range caps {
		seen[c.ID] = true
		w.observe(ctx, c)
	}
	defer func() {
		if w.Publish != nil {
			w.Publish(w.Views())
		}
	}()
	for id, st := range w.panes {
		if !seen[id] {
			if st.judging != nil {
				st.judging()
			}
			delete(w.panes, id)
			w.mu.Lock()
			delete(w.views, id)
			w.mu.Unlock()
		}
	}
	return nil
}

// observe acts on one capture.
func (w *Watcher) observe(ctx context.Context, c Capture) {
	st := w.panes[c.ID]
	if st == nil {
		st = &paneState{}
		w.panes[c.ID] = st
	}
	p, ok := w.Set.Recognise(c.Screen, c.Command)
	if !ok {
		if st.judging != nil {
			// The prompt went away while it was being judged: someone
			// answered it at the terminal. Stop waiting for a person.
			st.judging()
			st.judging = nil
			w.logf("%s: the prompt was answered at the terminal", c.Target)
		}
		if st.sentKey != "" {
			w.logf("%s: the prompt closed after the answer", c.Target)
		}
		*st = paneState{lastAnswer: st.lastAnswer}
		w.setView(c, func(v *PaneView) {
			if v.State != StateAnswered || w.now().Sub(v.Since) > 5*w.Interval {
				v.State = StateWorking
			}
		})
		return
	}
	key := p.Key()
	if c.InMode {
		st.stable = 0
		return
	}
	if key == st.key {
		st.stable++
	} else {
		st.key, st.stable = key, 1
	}
	w.setView(c, func(v *PaneView) {
		v.Agent, v.Prompt, v.Tool, v.Args = p.Agent, p.Question, p.Tool, argsLine(p)
	})
	if st.sentKey != "" {
		if st.sentKey == key && !st.alerted && w.now().Sub(st.sent) > w.AlertAfter {
			st.alerted = true
			w.logf("ALERT %s: the prompt is still on screen %s after the answer was typed", c.Target, w.AlertAfter)
			w.setView(c, func(v *PaneView) {
				v.State, v.Reason = StateAlert, "the prompt stayed after the answer was typed"
			})
			w.record(ctx, c, p, Ruling{}, nil, "alert: the prompt is still on screen after the answer was typed")
		}
		if st.sentKey == key {
			return
		}
		st.sentKey, st.alerted = "", false
	}
	if st.judging != nil {
		if st.judgingKey != key {
			// The prompt changed under the judgement: stop it; the new
			// prompt is judged once it is stable.
			st.judging()
			st.judging = nil
		} else {
			if w.now().Sub(st.judgeStart) > w.Interval {
				w.setView(c, func(v *PaneView) { v.State = StateWaiting })
			}
			return
		}
	}
	if st.handled == key {
		return
	}
	if st.stable < 2 {
		w.recheckSoon = true
		return
	}
	if w.now().Sub(st.lastAnswer) < w.MinGap {
		return
	}
	jctx, cancel := context.WithCancel(ctx)
	st.judging, st.judgingKey, st.judgeStart = cancel, key, w.now()
	session := "tmux/" + c.Session + "/" + c.ID
	w.setView(c, func(v *PaneView) {
		v.State, v.Answer, v.Reason, v.Session, v.ActionID = StateJudging, "", "", session, ""
	})
	w.logf("%s: %s prompt: judging %s %s", c.Target, p.Recogniser, p.Tool, argsLine(p))
	a := p.Action()
	a.Cwd = c.Path
	a.Session = session
	jctx = WithSubmitted(jctx, func(id string) {
		w.setView(c, func(v *PaneView) {
			if v.State == StateJudging || v.State == StateWaiting {
				v.ActionID = id
			}
		})
	})
	go func() {
		r, err := w.Judge.Judge(jctx, a)
		if err == nil && r.Level.NeedsPerson() {
			w.logf("%s: %s: asked a person (%s)", c.Target, r.Level, r.ActionID)
		}
		select {
		case w.results <- judged{pane: c, prompt: p, ruling: r, err: err}:
		case <-ctx.Done():
		}
	}()
}

// settle types the answer of a finished judgement, after checking the
// prompt is still the one judged.
func (w *Watcher) settle(ctx context.Context, r judged) {
	c, p := r.pane, r.prompt
	st := w.panes[c.ID]
	if st == nil || st.judging == nil || st.judgingKey != p.Key() {
		return // stale: the prompt changed or went away meanwhile
	}
	st.judging()
	st.judging = nil
	st.handled = p.Key()
	if r.err != nil {
		w.logf("%s: could not judge the prompt (%v); left for a person", c.Target, r.err)
		w.setView(c, func(v *PaneView) { v.State, v.Reason = StateLeft, r.err.Error() })
		return
	}
	ans := r.ruling.Answer
	var keys, moved []string
	why := ""
	move := false
	key := p.Key()
	switch ans {
	case Yes:
		keys = p.YesKeys
		switch {
		case !p.Complete() && r.ruling.Level.RunsWithoutPerson():
			// Never reached through the engine (an incomplete prompt asks
			// for a person); kept so no path auto-answers what it did not read.
			why = "the prompt was not read whole: " + p.Incomplete
		case len(p.Options) > 0 && p.AllowOnce >= 0 && p.Selected != p.AllowOnce && r.ruling.Level.NeedsPerson():
			// A person said yes to the call: the selection is moved to the
			// option that allows once, checked there, then chosen.
			move = true
		case len(p.Options) > 0 && (p.AllowOnce < 0 || p.Selected != p.AllowOnce):
			why = "the selection is not on the option that allows once"
		case len(p.Options) == 0 && c.Screen.CursorY != p.Row:
			why = "the cursor is not on the prompt's line"
		}
	case No:
		keys = p.NoKeys
	default:
		w.logf("%s: left for a person: %s", c.Target, r.ruling.Reason)
		w.setView(c, func(v *PaneView) { v.State, v.Answer, v.Reason = StateLeft, "", r.ruling.Reason })
		w.record(ctx, c, p, r.ruling, nil, "left for a person at the terminal: "+r.ruling.Reason)
		return
	}
	if why == "" {
		why = w.recheck(ctx, c, p)
	}
	if why == "" && move {
		moved, key, why = w.moveSelection(ctx, c, p)
	}
	if why != "" {
		w.logf("ALERT %s: not answering %s: %s", c.Target, ans, why)
		w.setView(c, func(v *PaneView) { v.State, v.Reason = StateAlert, why })
		w.record(ctx, c, p, r.ruling, moved, "not answered ("+ans.String()+"): "+why)
		return
	}
	if err := w.Tmux.Send(ctx, c.ID, keys); err != nil {
		w.logf("ALERT %s: typing the answer failed: %v", c.Target, err)
		w.setView(c, func(v *PaneView) { v.State, v.Reason = StateAlert, err.Error() })
		w.record(ctx, c, p, r.ruling, append(moved, keys...), "typing the answer failed: "+err.Error())
		return
	}
	keys = append(moved, keys...)
	now := w.now()
	// The prompt as answered (after a moved selection, as moved): it is not
	// judged again while it is still on screen.
	st.handled = key
	st.sentKey, st.sent, st.lastAnswer, st.alerted = key, now, now, false
	w.logf("%s: answered %s (%s) with %v: %s", c.Target, ans, r.ruling.Level, keys, argsLine(p))
	if ans == No && p.Feedback {
		if text := feedbackText(r.ruling.Reason); text != "" && w.promptGone(ctx, c, p) {
			// The text first, Enter apart: sent at once, an agent's input
			// takes the Enter as part of a paste.
			if err := w.Tmux.Send(ctx, c.ID, []string{text}); err == nil {
				time.Sleep(feedbackSettle)
				if err := w.Tmux.Send(ctx, c.ID, []string{"Enter"}); err == nil {
					keys = append(append([]string{}, keys...), text, "Enter")
					// An input that was still busy keeps the text: one more
					// Enter sends it (an empty input ignores an Enter).
					time.Sleep(feedbackSettle)
					if w.showsInput(ctx, c, text) && w.Tmux.Send(ctx, c.ID, []string{"Enter"}) == nil {
						keys = append(keys, "Enter")
					}
				}
			}
		}
	}
	w.setView(c, func(v *PaneView) { v.State, v.Answer, v.Reason = StateAnswered, ans.String(), r.ruling.Reason })
	w.record(ctx, c, p, r.ruling, keys, "answered "+ans.String())
}

// moveWait bounds the wait for a moved selection to be drawn.
const moveWait = 2 * time.Second

// moveSelection moves p's selection to the option that allows once (arrow
// keys) and checks, on a fresh capture, that the same prompt now shows the
// selection there: the keys typed, the moved prompt's key, or why not. When
// the check fails the selection may have moved: nothing more is typed.
func (w *Watcher) moveSelection(ctx context.Context, c Capture, p *Prompt) ([]string, string, string) {
	k, n := "Down", p.AllowOnce-p.Selected
	if n < 0 {
		k, n = "Up", -n
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = k
	}
	if err := w.Tmux.Send(ctx, c.ID, keys); err != nil {
		return keys, "", "moving the selection failed: " + err.Error()
	}
	deadline := time.Now().Add(moveWait)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return keys, "", ctx.Err().Error()
		case <-time.After(100 * time.Millisecond):
		}
		caps, err := w.Tmux.Capture(ctx, []Pane{c.Pane})
		if err != nil || len(caps) != 1 || caps[0].InMode {
			continue
		}
		q, ok := w.Set.Recognise(caps[0].Screen, caps[0].Command)
		if !ok || q.Recogniser != p.Recogniser || q.Question != p.Question || !slices.Equal(q.Options, p.Options) ||
			q.AllowOnce != p.AllowOnce || !reflect.DeepEqual(q.Args, p.Args) {
			return keys, "", "the prompt changed while its selection was moved; answer it at the terminal"
		}
		if q.Selected == p.AllowOnce {
			return keys, q.Key(), ""
		}
	}
	return keys, "", "the selection did not move to the option that allows once; answer it at the terminal"
}

// recheck captures the pane again just before typing: the same prompt must
// still be at the bottom, with the same selection.
func (w *Watcher) recheck(ctx context.Context, c Capture, p *Prompt) string {
	caps, err := w.Tmux.Capture(ctx, []Pane{c.Pane})
	if err != nil || len(caps) != 1 {
		return fmt.Sprintf("the pane could not be captured again: %v", err)
	}
	if caps[0].InMode {
		return "the pane is in copy mode"
	}
	q, ok := w.Set.Recognise(caps[0].Screen, caps[0].Command)
	if !ok || q.Key() != p.Key() {
		return "the prompt changed before the answer could be typed"
	}
	return ""
}

// record writes the watcher's part of an answer into the audit log: the
// pane, the prompt as drawn, what was extracted, the verdict and the keys.
func (w *Watcher) record(ctx context.Context, c Capture, p *Prompt, r Ruling, keys []string, what string) {
	if r.ActionID == "" {
		return // nothing was recorded to attach it to
	}
	var b strings.Builder
	fmt.Fprintf(&b, "overseer watch: %s\npane: %s (%s) in %s, process %s\nrecogniser: %s\nlevel: %s\nreason: %s\nkeys: %q\n",
		what, c.ID, c.Target, c.Path, c.Command, p.Recogniser, r.Level, r.Reason, keys)
	if p.Incomplete != "" {
		fmt.Fprintf(&b, "incomplete: %s\n", p.Incomplete)
	}
	fmt.Fprintf(&b, "screen:\n%s\n", p.Excerpt)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := w.Judge.Record(rctx, kernel.Result{ActionID: r.ActionID, Agent: p.Agent, Session: "tmux/" + c.Session + "/" + c.ID,
		Tool: p.Tool, Output: b.String(), Args: p.Args})
	if err != nil {
		w.logf("%s: recording the answer failed: %v", c.Target, err)
	}
}

// argsLine is the extracted call on one line, shortened for the view.
func argsLine(p *Prompt) string {
	var parts []string
	for _, k := range []string{"command", "cmd", "file_path", "input", "question"} {
		if v, ok := p.Args[k].(string); ok && v != "" {
			parts = append(parts, v)
		}
	}
	if p.Kind == action.KindMCP && len(parts) == 0 {
		if b, err := json.Marshal(p.Args); err == nil {
			parts = append(parts, string(b))
		}
	}
	s := strings.ReplaceAll(strings.Join(parts, " "), "\n", "⏎")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// feedbackWait bounds the wait for a refused prompt to close before its
// reason is typed into the agent's input.
const feedbackWait = 2 * time.Second

// feedbackSettle separates typed text from the Enter that sends it.
const feedbackSettle = 500 * time.Millisecond

// promptGone waits (briefly) until p is no longer on the pane's screen and
// the agent shows no other prompt: only then may text be typed.
func (w *Watcher) promptGone(ctx context.Context, c Capture, p *Prompt) bool {
	deadline := time.Now().Add(feedbackWait)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
		caps, err := w.Tmux.Capture(ctx, []Pane{c.Pane})
		if err != nil || len(caps) != 1 || caps[0].InMode {
			return false
		}
		if _, ok := w.Set.Recognise(caps[0].Screen, caps[0].Command); !ok {
			return true
		}
	}
	return false
}

// showsInput reports whether the bottom of the pane still shows text typed
// into the agent's input (and no prompt).
func (w *Watcher) showsInput(ctx context.Context, c Capture, text string) bool {
	caps, err := w.Tmux.Capture(ctx, []Pane{c.Pane})
	if err != nil || len(caps) != 1 || caps[0].InMode {
		return false
	}
	sc := caps[0].Screen
	if _, ok := w.Set.Recognise(sc, caps[0].Command); ok {
		return false
	}
	head := text[:min(len(text), 40)]
	for i := max(0, sc.lastLine()-8); i <= sc.lastLine(); i++ {
		if strings.Contains(sc.Lines[i], head) {
			return true
		}
	}
	return false
}

// feedbackText is the refusal's reason as one line of plain text for the
// agent's input (it becomes the person's next message to the agent).
func feedbackText(reason string) string {
	reason = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return ' '
		}
		return r
	}, reason)), " ")
	if reason == "" {
		return ""
	}
	if r := []rune(reason); len(r) > 300 {
		reason = string(r[:300]) + "…"
	}
	return "Overseer refused that call: " + reason
}
