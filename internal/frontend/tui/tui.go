// Package tui is Overseer's terminal UI (`overseer tui`): the approvals
// queue with previews, answered from the keyboard, and a live tail of the
// audit log. It talks to the daemon through its HTTP API, so it works over
// SSH wherever the daemon's home (for the token) is readable.
//
// The UI is a Bubble Tea program. Its model is a plain value: Update is a
// pure state transition over messages (keys, the results of API calls,
// ticks), and every API call runs as a command, so the model can be tested
// without a terminal.
package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/frontend/watch"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/mcppin"
	"github.com/overseer-dev/overseer/internal/store"
)

// Options configure the UI.
type Options struct {
	// Who names the person answering (recorded with each answer).
	Who string
	// Poll is how often the queue and the audit tail are re-read.
	// Default one second.
	Poll time.Duration
	// Now is the clock for waiting times (default time.Now).
	Now func() time.Time
	// Title is shown in the header (e.g. the daemon's address).
	Title string
	// Home is the person's home directory: working directories under it
	// are shown as ~/…. Empty: shown in full.
	Home string
}

// Channel is the channel recorded for answers given in the terminal UI.
const Channel = "tui"

// tailSize is how many audit records the tail keeps.
const tailSize = 200

// remember scopes, in the order r cycles through them.
var rememberScopes = []string{"once", "session", "rule"}

// Model is the UI's state.
type Model struct {
	api  API
	opts Options
	ctx  context.Context

	width, height int
	pending       []*store.Approval
	selected      string // approval id
	remember      map[string]string
	rules         map[string]string // approval id → proposed rule (approve), shown for remember=rule
	tail          []store.AuditRecord
	lastSeq       int64
	mode          mode
	reason        []rune
	status        string
	statusBad     bool
	connected     bool
	busy          map[string]bool
	quitting      bool
	proposals     []kernel.Proposal // trust.go
	propList      listView
	propNext      time.Time    // when the proposals are read again
	pins          []mcppin.Pin // pins.go
	pinList       listView
	grants        []kernel.GrantView // grants.go
	grantList     listView
	agents        []*kernel.AgentTrust // agents.go
	agentList     listView
	agentRec      *kernel.AgentRecord // the selected agent's record
	agentTools    map[string]bool     // tools picked for a promotion to supervised
	agentAccept   bool                // promote although violations were found
	panes         []watch.PaneSet     // panes.go
	paused        []store.AgentPause  // pauses.go
	ctl           controlsState       // controls.go

	// after schedules the next refresh (tea.Tick); tests replace it so
	// that a timer is never confused with a slow API call.
	after func(time.Duration, func(time.Time) tea.Msg) tea.Cmd
}

type mode int

const (
	modeQueue  mode = iota
	modeReason      // typing a deny reason
	modeHelp
	modeProposals // trust.go: the proposed rules
	modePins      // pins.go: the MCP definitions withheld or flagged
	modeGrants    // grants.go: the active grants
	modePanes     // panes.go: the panes overseer watch watches
	modeAutoRules // controls.go: the auto-rules and their log
	modeAnomaly   // controls.go: the anomaly rules, anomalies and rollbacks
	modeLimits    // controls.go: rate limits and budget caps, use against limit
	modeAgents    // agents.go: the agents' records and trust
)

// New returns the UI's model over api. ctx bounds its API calls.
func New(ctx context.Context, api API, opts Options) Model {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Who == "" {
		opts.Who = "tui"
	}
	return Model{api: api, opts: opts, ctx: ctx, lastSeq: -1, remember: map[string]string{},
		rules: map[string]string{}, busy: map[string]bool{}, width: 100, height: 30, after: tea.Tick}
}

// Messages.
type (
	// refreshMsg carries a fresh read of the queue and the audit tail.
	refreshMsg struct {
		pending []*store.Approval
		audit   []store.AuditRecord
		err     error
	}
	// answeredMsg is the outcome of an answer.
	answeredMsg struct {
		id, decision string
		resp         *client.AnswerResponse
		err          error
	}
	// ruleMsg carries the proposed rule of an approval.
	ruleMsg struct {
		id   string
		rule string
		err  error
	}
	// tickMsg asks for the next refresh.
	tickMsg time.Time
)

// Init starts the first refresh.
func (m Model) Init() tea.Cmd { return m.refresh() }

func (m Model) refresh() tea.Cmd {
	api, ctx, seq := m.api, m.ctx, m.lastSeq
	return func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		pending, err := api.Pending(cctx)
		if err != nil {
			return refreshMsg{err: err}
		}
		recs, err := api.AuditAfter(cctx, seq, 50)
		return refreshMsg{pending: pending, audit: recs, err: err}
	}
}

// apiTimeout bounds one call of the TUI to the daemon.
const apiTimeout = 30 * time.Second

// call is a command that runs fn with the model's context, bounded by
// apiTimeout: every request the TUI makes of the daemon.
func (m Model) call(fn func(ctx context.Context) tea.Msg) tea.Cmd {
	ctx := m.ctx
	return func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, apiTimeout)
		defer cancel()
		return fn(cctx)
	}
}

func (m Model) tick() tea.Cmd {
	return m.after(m.opts.Poll, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m Model) answer(id, decision, reason, remember string) tea.Cmd {
	api, who := m.api, m.opts.Who
	return m.call(func(cctx context.Context) tea.Msg {
		req := client.AnswerRequest{Who: who, Channel: Channel, Reason: reason}
		if remember != "once" {
			req.Remember = remember
		}
		resp, err := api.Answer(cctx, id, decision, req)
		return answeredMsg{id: id, decision: decision, resp: resp, err: err}
	})
}

func (m Model) fetchRule(id string) tea.Cmd {
	api, ctx := m.api, m.ctx
	return func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		raw, err := api.ProposedRule(cctx, id)
		if err != nil {
			return ruleMsg{id: id, err: err}
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return ruleMsg{id: id, err: err}
		}
		b, _ := json.Marshal(v)
		return ruleMsg{id: id, rule: string(b)}
	}
}

// Update applies a message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if mm, cmd, ok := m.updateTrust(msg); ok {
		return mm, cmd
	}
	if mm, cmd, ok := m.updatePins(msg); ok {
		return mm, cmd
	}
	if mm, cmd, ok := m.updateGrants(msg); ok {
		return mm, cmd
	}
	if mm, cmd, ok := m.updateAgents(msg); ok {
		return mm, cmd
	}
	if mm, cmd, ok := m.updatePanes(msg); ok {
		return mm, cmd
	}
	if mm, cmd, ok := m.updatePauses(msg); ok {
		return mm, cmd
	}
	if mm, cmd, ok := m.updateControls(msg); ok {
		return mm, cmd
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case tickMsg:
		return m, m.refresh()
	case refreshMsg:
		if msg.err != nil {
			m.connected = false
			if !m.statusBad { // keep an answer's failure on screen
				m.setStatus("cannot reach the daemon: "+msg.err.Error(), true)
			}
			return m, m.tick()
		}
		if !m.connected && m.statusBad {
			m.status, m.statusBad = "", false
		}
		m.connected = true
		m.setPending(msg.pending)
		m.addAudit(msg.audit)
		m, fetch := m.proposalsDue() // trust.go (and the pins' header hint)
		if m.mode == modePins {
			fetch = tea.Batch(fetch, m.fetchPins())
		}
		if m.mode == modePanes {
			fetch = tea.Batch(fetch, m.fetchPanes())
		}
		if m.mode == modeLimits || m.mode == modeAnomaly || m.mode == modeAutoRules {
			fetch = tea.Batch(fetch, m.fetchControls(m.mode)) // live use, firings
		}
		return m, tea.Batch(m.tick(), fetch, m.fetchPaused())
	case answeredMsg:
		delete(m.busy, msg.id)
		switch {
		case msg.err != nil:
			m.setStatus(fmt.Sprintf("%s %s failed: %v", msg.decision, msg.id, msg.err), true)
		case !msg.resp.Applied:
			m.setStatus(fmt.Sprintf("%s was already %s; your answer was recorded only", msg.id, statusOf(msg.resp)), false)
		default:
			s := fmt.Sprintf("%s: %s", msg.id, statusOf(msg.resp))
			if msg.resp.Warning != "" {
				s += " (warning: " + msg.resp.Warning + ")"
				m.setStatus(s, true)
			} else {
				m.setStatus(s, false)
			}
			m.drop(msg.id)
		}
		return m, m.refresh()
	case ruleMsg:
		if msg.err != nil {
			m.setStatus("proposed rule: "+msg.err.Error(), true)
		} else {
			m.rules[msg.id] = msg.rule
		}
		return m, nil
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

func statusOf(r *client.AnswerResponse) string {
	if r == nil || r.Approval == nil {
		return "answered"
	}
	return string(r.Approval.Status)
}

func (m *Model) setStatus(s string, bad bool) { m.status, m.statusBad = s, bad }

// setPending replaces the queue, keeping the selection where it can.
func (m *Model) setPending(list []*store.Approval) {
	m.pending = list
	if m.index(m.selected) < 0 {
		m.selected = ""
		if len(list) > 0 {
			m.selected = list[0].ID
		}
	}
	live := map[string]bool{}
	for _, a := range list {
		live[a.ID] = true
	}
	for id := range m.remember {
		if !live[id] {
			delete(m.remember, id)
			delete(m.rules, id)
		}
	}
}

func (m *Model) drop(id string) {
	out := m.pending[:0:0]
	for _, a := range m.pending {
		if a.ID != id {
			out = append(out, a)
		}
	}
	m.setPending(out)
}

func (m *Model) addAudit(recs []store.AuditRecord) {
	for _, r := range recs {
		if r.Seq <= m.lastSeq {
			continue
		}
		m.tail = append(m.tail, r)
		m.lastSeq = r.Seq
	}
	if m.lastSeq < 0 {
		m.lastSeq = 0 // an empty log: from now on, read from the start
	}
	if len(m.tail) > tailSize {
		m.tail = m.tail[len(m.tail)-tailSize:]
	}
}

func (m Model) index(id string) int {
	for i, a := range m.pending {
		if a.ID == id {
			return i
		}
	}
	return -1
}

func (m Model) current() *store.Approval {
	if i := m.index(m.selected); i >= 0 {
		return m.pending[i]
	}
	return nil
}

func (m Model) rememberOf(id string) string {
	if r := m.remember[id]; r != "" {
		return r
	}
	return "once"
}

func (m Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	s := k.String()
	if s == "ctrl+c" {
		m.quitting = true
		return m, tea.Quit
	}
	switch m.mode {
	case modeHelp:
		m.mode = modeQueue
		return m, nil
	case modeProposals:
		return m.trustKey(s)
	case modePins:
		return m.pinsKey(s)
	case modeGrants:
		return m.grantsKey(s)
	case modeAgents:
		return m.agentsKey(s)
	case modePanes:
		return m.panesKey(s)
	case modeAutoRules, modeAnomaly, modeLimits:
		return m.controlsKey(s)
	case modeReason:
		switch s {
		case "esc":
			m.mode, m.reason = modeQueue, nil
			m.setStatus("deny cancelled", false)
		case "enter":
			cur := m.current()
			m.mode = modeQueue
			reason := strings.TrimSpace(string(m.reason))
			m.reason = nil
			if cur == nil {
				return m, nil
			}
			return m.send(cur, "deny", reason)
		case "backspace":
			if len(m.reason) > 0 {
				m.reason = m.reason[:len(m.reason)-1]
			}
		default:
			if k.Text != "" && len(m.reason) < 2000 {
				m.reason = append(m.reason, []rune(k.Text)...)
			}
		}
		return m, nil
	}
	cur := m.current()
	switch s {
	case "q":
		m.quitting = true
		return m, tea.Quit
	case "?", "h":
		m.mode = modeHelp
	case "m":
		if _, ok := m.pinsAPI(); ok {
			m.mode = modePins
			m.setStatus("", false)
			return m, m.fetchPins()
		}
	case "G":
		if _, ok := m.grantsAPI(); ok {
			m.mode = modeGrants
			m.setStatus("", false)
			return m, m.fetchGrants()
		}
	case "T":
		if _, ok := m.agentsAPI(); ok {
			m.mode = modeAgents
			m.setStatus("", false)
			return m, m.fetchAgents()
		}
	case "w":
		if _, ok := m.panesAPI(); ok {
			m.mode = modePanes
			m.setStatus("", false)
			return m, m.fetchPanes()
		}
	case "R", "n", "l":
		if _, ok := m.controlsAPI(); ok {
			m.mode = map[string]mode{"R": modeAutoRules, "n": modeAnomaly, "l": modeLimits}[s]
			m.setStatus("", false)
			return m, m.fetchControls(m.mode)
		}
	case "U":
		return m.resumeFirst() // pauses.go
	case "p":
		if _, ok := m.trustAPI(); ok {
			m.mode = modeProposals
			m.setStatus("", false)
			return m, m.fetchProposals()
		}
	case "j", "down":
		m.move(1)
	case "k", "up":
		m.move(-1)
	case "a":
		if cur != nil {
			return m.send(cur, "approve", "")
		}
	case "d":
		if cur != nil {
			m.mode, m.reason = modeReason, nil
			m.setStatus("", false)
		}
	case "x":
		if cur != nil {
			return m.send(cur, "abort", "")
		}
	case "r":
		if cur != nil {
			next := rememberScopes[0]
			for i, r := range rememberScopes {
				if r == m.rememberOf(cur.ID) {
					next = rememberScopes[(i+1)%len(rememberScopes)]
				}
			}
			m.remember[cur.ID] = next
			if next == "rule" && m.rules[cur.ID] == "" {
				return m, m.fetchRule(cur.ID)
			}
		}
	}
	return m, nil
}

func (m Model) send(cur *store.Approval, decision, reason string) (tea.Model, tea.Cmd) {
	if m.busy[cur.ID] {
		return m, nil
	}
	m.busy[cur.ID] = true
	m.setStatus(fmt.Sprintf("sending %s for %s…", decision, cur.ID), false)
	return m, m.answer(cur.ID, decision, reason, m.rememberOf(cur.ID))
}

func (m *Model) move(step int) {
	if len(m.pending) == 0 {
		return
	}
	i := m.index(m.selected)
	i = max(0, min(len(m.pending)-1, i+step))
	m.selected = m.pending[i].ID
}

// Styles.
var (
	stTitle    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("#7fb0e0"))
	stFaint    = lipgloss.NewStyle().Faint(true)
	stBold     = lipgloss.NewStyle().Bold(true)
	stSel      = lipgloss.NewStyle().Reverse(true)
	stBad      = lipgloss.NewStyle().Foreground(lipgloss.Color("#e5534b")).Bold(true)
	stOK       = lipgloss.NewStyle().Foreground(lipgloss.Color("#57ab5a"))
	stAdd      = lipgloss.NewStyle().Foreground(lipgloss.Color("#57ab5a"))
	stDel      = lipgloss.NewStyle().Foreground(lipgloss.Color("#e5534b"))
	levelStyle = map[action.Level]lipgloss.Style{
		action.Confirm: lipgloss.NewStyle().Foreground(lipgloss.Color("#e8b339")).Bold(true),
		action.Approve: lipgloss.NewStyle().Foreground(lipgloss.Color("#e07b39")).Bold(true),
		action.Block:   lipgloss.NewStyle().Foreground(lipgloss.Color("#e5534b")).Bold(true),
		action.Notify:  lipgloss.NewStyle().Foreground(lipgloss.Color("#4e9ad6")),
		action.Auto:    lipgloss.NewStyle().Foreground(lipgloss.Color("#7fb77e")),
	}
)

func lvl(l action.Level) string {
	if st, ok := levelStyle[l]; ok {
		return st.Render(l.String())
	}
	return l.String()
}

func dur(d time.Duration) string {
	if d < 0 {
		return "now"
	}
	d = d.Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	if d >= time.Minute {
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

// mainArg is the argument a person most needs to see.
func mainArg(a *action.Action) string {
	if v, ok := a.Subject(); ok {
		return v
	}
	return a.ArgsLine()
}

// oneLine puts s on one line, without control characters: what it shows
// (commands, paths, reasons) may come from an agent, and a terminal escape
// in it must not reach the person's terminal.
func oneLine(s string) string { return plain(strings.Join(strings.Fields(s), " ")) }

// plain drops control characters (terminal escapes among them) from text an
// agent may have written, such as what ingest read from a transcript.
func plain(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// View renders the screen.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "Overseer"
	return v
}

// view is one of the views besides the queue: what it shows below the
// header, and its key line (replaced by the status while there is one).
type view struct {
	render func(add, rule func(string))
	foot   string
}

func (m Model) views() map[mode]view {
	return map[mode]view{
		modePanes:     {m.renderPanes, panesFoot},
		modePins:      {m.renderPins, pinsFoot},
		modeGrants:    {m.renderGrants, grantsFoot},
		modeAgents:    {m.renderAgents, agentsFoot},
		modeProposals: {m.renderProposals, trustFoot},
		modeAutoRules: {m.renderAutoRules, autoRulesFoot},
		modeAnomaly:   {m.renderAnomaly, anomalyFoot},
		modeLimits:    {m.renderLimits, limitsFoot},
	}
}

func (m Model) render() string {
	if m.quitting {
		return ""
	}
	w := max(m.width, 40)
	var lines []string
	add := func(s string) { lines = append(lines, ansi.Truncate(s, w, "…")) }
	rule := func(title string) {
		add(stFaint.Render("── ") + stBold.Render(title) + " " + stFaint.Render(strings.Repeat("─", max(0, w-len(title)-4))))
	}

	live := stOK.Render("● live")
	if !m.connected {
		live = stBad.Render("● offline")
	}
	head := stTitle.Render("Overseer") + "  " + fmt.Sprintf("%d waiting", len(m.pending))
	if m.opts.Title != "" {
		head += stFaint.Render("  " + m.opts.Title)
	}
	add(head + "  " + live + m.proposalsHint() + m.pinsHint())
	for _, l := range m.pausedLines() {
		add(l)
	}

	if m.mode == modeHelp {
		rule("Keys")
		for _, l := range []string{
			"j / ↓   next request          k / ↑   previous request",
			"a       approve               d       deny (type a reason, Enter sends, Esc cancels)",
			"x       abort the agent's task",
			"U       resume the first paused agent",
			"r       remember: once → session → rule",
			"p       proposed rules (learned from your approvals): A accept, D dismiss",
			"m       MCP definitions withheld (changed or suspicious): A accept",
			"G       active grants (delegated mode): R revoke",
			"T       agents and their trust (record, violations): P promote, D demote",
			"w       panes watched by overseer watch (agent, last prompt, state)",
			"R       auto-rules: on/off, times fired, last fired, the rule log; E turns one on or off",
			"n       anomaly rules, the anomalies detected and their rollbacks; E turns a rule on or off",
			"l       rate limits and budget caps: current use against the limit",
			"?       this help             q       quit",
			"", "Press any key to go back.",
		} {
			add(l)
		}
		return strings.Join(lines, "\n")
	}

	if v, ok := m.views()[m.mode]; ok {
		v.render(add, rule)
		foot := v.foot
		if m.status != "" {
			foot = stOK.Render(m.status)
			if m.statusBad {
				foot = stBad.Render(m.status)
			}
		}
		add(foot)
		return strings.Join(lines, "\n")
	}

	now := m.opts.Now()
	rule("Waiting for you")
	if len(m.pending) == 0 {
		add(stFaint.Render("  Nothing is waiting. New requests appear here as they arrive."))
	}
	maxRows := max(3, (m.height-12)/3)
	start := 0
	if i := m.index(m.selected); i >= maxRows {
		start = i - maxRows + 1
	}
	for i, a := range m.pending {
		if i < start || i >= start+maxRows {
			continue
		}
		who := strings.Trim(a.Agent+"/"+short(a.Session, 12), "/")
		row := fmt.Sprintf("%-14s %s  %s  %s  waiting %s · times out in %s", a.Tool, lvl(a.Level), who,
			orDash(m.dir(a.Action.Cwd, 32)), dur(now.Sub(a.CreatedAt)), dur(a.Deadline.Sub(now)))
		if m.busy[a.ID] {
			row += " · sending…"
		}
		if a.ID == m.selected {
			add(stSel.Render("▶ " + ansi.Strip(row)))
		} else {
			add("  " + row)
		}
		add(stFaint.Render("    " + oneLine(mainArg(&a.Action))))
	}
	if n := len(m.pending) - start - maxRows; n > 0 {
		add(stFaint.Render(fmt.Sprintf("  … %d more (j/k)", n)))
	}

	if cur := m.current(); cur != nil {
		rule("Request " + cur.ID)
		add(fmt.Sprintf("%s %s · %s · agent %s · session %s", stBold.Render(cur.Tool), "("+string(cur.Kind)+")",
			lvl(cur.Level), orDash(cur.Agent), orDash(cur.Session)))
		// Where it runs, first: "rm -rf ./tmp_*" means nothing without it.
		add("In:  " + stBold.Render(orDash(m.dir(cur.Action.Cwd, 0))))
		add("Run: " + oneLine(mainArg(&cur.Action)))
		add(stFaint.Render(fmt.Sprintf("Asked %s ago by %s", dur(now.Sub(cur.CreatedAt)), askerOf(cur.Asker, now))))
		if cur.Action.Intent != "" {
			add("  intent: " + oneLine(cur.Action.Intent))
		}
		add("Why: " + cur.Verdict.Summary())
		for _, r := range cur.Verdict.Reasons {
			if r.Level < action.Confirm {
				continue
			}
			add(fmt.Sprintf("  - %s %s %s: %s", lvl(r.Level), r.Layer, r.Origin(), oneLine(r.Message)))
		}
		if p := cur.Verdict.Preview; p != nil {
			for i, l := range strings.Split(strings.TrimRight(p.Summary, "\n"), "\n") {
				if i == 0 {
					add("Preview: " + l)
				} else if i < 8 {
					add("  " + l)
				}
			}
			for i, it := range p.Items {
				if i == 5 {
					add(stFaint.Render(fmt.Sprintf("  … %d more", len(p.Items)-5+p.More)))
					break
				}
				add("  " + it)
			}
			if p.Diff != "" {
				dl := strings.Split(strings.TrimRight(p.Diff, "\n"), "\n")
				for i, l := range dl {
					if i == 8 {
						add(stFaint.Render(fmt.Sprintf("  … %d more diff lines", len(dl)-8)))
						break
					}
					switch {
					case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
						add("  " + stAdd.Render(l))
					case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
						add("  " + stDel.Render(l))
					default:
						add("  " + stFaint.Render(l))
					}
				}
			}
		}
		rem := m.rememberOf(cur.ID)
		add("Remember: " + stBold.Render(rem) + stFaint.Render("  (r to change)"))
		if rem == "rule" {
			if r := m.rules[cur.ID]; r != "" {
				add(stFaint.Render("  rule to save on approve: ") + r)
				add(stFaint.Render("  (a deny saves the matching block rule; edit rules in the web console)"))
			} else {
				add(stFaint.Render("  loading the proposed rule…"))
			}
		}
	}

	if m.mode == modeReason {
		add(stBold.Render("Deny — reason or instruction for the agent: ") + string(m.reason) + "█")
		add(stFaint.Render("  Enter sends · Esc cancels"))
	}

	// The audit tail fills what is left.
	used := len(lines) + 3
	room := max(3, m.height-used)
	rule("Audit (live)")
	from := max(0, len(m.tail)-room)
	for _, r := range m.tail[from:] {
		add(stFaint.Render(fmt.Sprintf("#%-5d %s ", r.Seq, r.Time.Local().Format("15:04:05"))) +
			fmt.Sprintf("%-16s %s", r.Type, describe(r)))
	}
	if len(m.tail) == 0 {
		add(stFaint.Render("  (no records yet)"))
	}

	foot := "a approve · d deny · x abort · r remember · p proposed rules · j/k move · ? help · q quit"
	if m.status != "" {
		if m.statusBad {
			foot = stBad.Render(m.status)
		} else {
			foot = stOK.Render(m.status)
		}
	}
	add(foot)
	return strings.Join(lines, "\n")
}

// dir shows a working directory: under the home directory as ~/…, and,
// when n > 0, cut from the left to n characters ("…/proj/app").
func (m Model) dir(p string, n int) string {
	if h := m.opts.Home; h != "" && h != "/" && p != "" {
		if p == h {
			p = "~"
		} else if rest, ok := strings.CutPrefix(p, strings.TrimSuffix(h, "/")+"/"); ok {
			p = "~/" + rest
		}
	}
	if r := []rune(p); n > 1 && len(r) > n {
		p = "…" + string(r[len(r)-n+1:])
	}
	return p
}

// short cuts an id to n characters.
func short(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// askerOf says who holds a request's call.
func askerOf(a *store.Asker, now time.Time) string {
	if a == nil {
		return "a caller that did not say who waits"
	}
	s := a.Kind
	switch a.Kind {
	case "hook":
		s = "the agent's hook"
	case "mcp":
		s = "an MCP client"
	}
	if a.PID > 0 {
		s += fmt.Sprintf(" (process %d)", a.PID)
	}
	if !a.Until.IsZero() && a.Until.After(now) {
		s += ", waiting " + dur(a.Until.Sub(now)) + " more"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// describe is a one-line account of an audit record.
func describe(r store.AuditRecord) string {
	tool := r.Tool
	switch r.Type {
	case "action":
		var a action.Action
		if json.Unmarshal(r.Data, &a) == nil {
			return tool + ": " + oneLine(mainArg(&a))
		}
	case "verdict":
		var v action.Verdict
		if json.Unmarshal(r.Data, &v) == nil {
			s := tool + " → " + lvl(v.Level)
			if g := firewall.InsideGrant(&v); g != "" {
				s += " inside grant " + g
			}
			for _, rs := range v.Reasons {
				switch {
				case strings.HasPrefix(rs.Name, firewall.GrantEdgePrefix):
					s += " at the edge of grant " + strings.TrimPrefix(rs.Name, firewall.GrantEdgePrefix)
				case strings.HasPrefix(rs.Name, "conflicts."):
					s += " · conflict"
				case rs.Name == "paths.read-before-edit" && rs.Level == action.Block:
					s += " · stale read"
				}
			}
			return s + " " + oneLine(v.Summary())
		}
	case "approval_request":
		var a store.Approval
		if json.Unmarshal(r.Data, &a) == nil {
			return tool + " asked a person: " + a.ID
		}
	case "answer":
		var ar struct {
			ApprovalID string       `json:"approval_id"`
			Answer     store.Answer `json:"answer"`
		}
		if json.Unmarshal(r.Data, &ar) == nil {
			s := fmt.Sprintf("%s %s by %s via %s", ar.ApprovalID, ar.Answer.Decision, ar.Answer.Who, ar.Answer.Channel)
			switch {
			case ar.Answer.Who == "withdrawn" && ar.Answer.Channel == "withdrawn":
				s = ar.ApprovalID + " withdrawn (not a refusal)"
			case ar.Answer.Who == "timeout" && ar.Answer.Channel == "timeout":
				s = fmt.Sprintf("%s timed out: default %s", ar.ApprovalID, ar.Answer.Decision)
			}
			if ar.Answer.Reason != "" {
				s += ": " + oneLine(ar.Answer.Reason)
			}
			return s
		}
	case "ingested": // audited mode: a call read from a transcript, judged after the fact
		var in kernel.IngestedRecord
		if json.Unmarshal(r.Data, &in) == nil {
			return fmt.Sprintf("%s (ingested from %s:%d) → %s %s", plain(tool), plain(filepath.Base(in.Source.File)), in.Source.Line,
				lvl(in.Verdict.Level), plain(oneLine(in.Verdict.Summary())))
		}
	case "trust":
		var c kernel.TrustChange
		if json.Unmarshal(r.Data, &c) == nil {
			return plain(oneLine(fmt.Sprintf("%s %s: %s → %s by %s: %s", c.Agent, c.Op+"d", c.From, c.To, c.Who, c.Reason)))
		}
	case "ingested_result":
		var ir struct {
			Source  kernel.IngestSource `json:"source"`
			IsError bool                `json:"is_error"`
			Change  *struct {
				Path        string `json:"path"`
				Created     bool   `json:"created"`
				PatchSHA256 string `json:"patch_sha256"`
			} `json:"change"`
		}
		if json.Unmarshal(r.Data, &ir) == nil {
			s := fmt.Sprintf("result of %s (ingested from %s:%d)", r.ActionID, filepath.Base(ir.Source.File), ir.Source.Line)
			if ir.IsError {
				s += ", failed"
			}
			if c := ir.Change; c != nil {
				how := "wrote"
				switch {
				case c.Created:
					how = "created"
				case c.PatchSHA256 != "":
					how = "patched"
				}
				s += fmt.Sprintf("; %s %s (can be rolled back)", how, c.Path)
			}
			return plain(oneLine(s))
		}
	case kernel.TypeGrant:
		var gr struct {
			Op      string        `json:"op"`
			ID      string        `json:"id"`
			Grant   *kernel.Grant `json:"grant"`
			Revoked *struct {
				By, Reason string
			} `json:"revoked"`
		}
		if json.Unmarshal(r.Data, &gr) == nil {
			switch {
			case gr.Op == "issue" && gr.Grant != nil:
				g := gr.Grant
				s := fmt.Sprintf("grant %s issued by %s for %s until %s", g.ID, g.IssuedBy, g.Subject, g.Expires.Local().Format("15:04"))
				if g.Parent != "" {
					s += ", carved out of " + g.Parent
				}
				if g.Budget.Steps > 0 {
					s += fmt.Sprintf(", %d steps", g.Budget.Steps)
				}
				return plain(oneLine(s))
			case gr.Op == "revoke" && gr.Revoked != nil:
				return plain(oneLine(fmt.Sprintf("grant %s revoked by %s: %s", gr.ID, gr.Revoked.By, gr.Revoked.Reason)))
			}
		}
	case "alert":
		var al struct {
			Kind    string `json:"kind"`
			Summary string `json:"summary"`
			Message string `json:"message"`
		}
		if json.Unmarshal(r.Data, &al) == nil && (al.Summary != "" || al.Message != "") {
			return plain(oneLine(strings.TrimSpace(al.Kind + " alert: " + al.Summary + al.Message)))
		}
	case kernel.TypeAgentPaused, kernel.TypeAgentResumed:
		var pr kernel.PauseRecord
		if json.Unmarshal(r.Data, &pr) == nil && pr.Agent != "" {
			verb := "paused"
			if r.Type == kernel.TypeAgentResumed {
				verb = "resumed"
			}
			s := fmt.Sprintf("agent %s %s by %s", pr.Agent, verb, pr.By)
			if pr.Reason != "" {
				s += ": " + pr.Reason
			}
			return plain(oneLine(s))
		}
	case "task":
		var ev struct {
			Event  string `json:"event"`
			TaskID string `json:"task_id"`
			Goal   string `json:"goal"`
			Status string `json:"status"`
			Who    string `json:"who"`
			Result string `json:"result"`
		}
		if json.Unmarshal(r.Data, &ev) == nil && ev.TaskID != "" {
			s := fmt.Sprintf("task %s %s", ev.TaskID, strings.ReplaceAll(ev.Event, "_", " "))
			switch {
			case ev.Event == "created" && ev.Goal != "":
				s += ": " + ev.Goal
			case ev.Event == "ended":
				s += " " + ev.Status
				if ev.Result != "" {
					s += ": " + ev.Result
				}
			case ev.Who != "":
				s += " by " + ev.Who
			}
			return plain(oneLine(s))
		}
	case "rollback":
		var rb struct{ Path, Who, Channel string }
		if json.Unmarshal(r.Data, &rb) == nil {
			return plain(oneLine(fmt.Sprintf("rolled back %s (ingested %s) by %s via %s", rb.Path, r.ActionID, rb.Who, rb.Channel)))
		}
	}
	return tool + " " + oneLine(string(r.Data))
}

// Run runs the UI on the terminal until the person quits or ctx ends.
func Run(ctx context.Context, api API, opts Options, progOpts ...tea.ProgramOption) error {
	m := New(ctx, api, opts)
	p := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx)}, progOpts...)...)
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// ProgramOption configures the terminal program (input, output).
type ProgramOption = tea.ProgramOption

// WithInput reads keys from r instead of the terminal.
func WithInput(r io.Reader) ProgramOption { return tea.WithInput(r) }

// WithOutput draws on w instead of the terminal.
func WithOutput(w io.Writer) ProgramOption { return tea.WithOutput(w) }
