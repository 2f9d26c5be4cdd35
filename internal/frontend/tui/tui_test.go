package tui

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

const token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

const testPolicy = `version: 1
extends: builtin
rules:
  - name: test-deploy
    tool: [deploy]
    level: approve
    message: Deploys need a person.
`

// daemon is a real kernel behind the real HTTP API on loopback.
type daemon struct {
	k   *kernel.Kernel
	srv *httptest.Server
	api API
}

func newDaemon(t *testing.T) *daemon {
	t.Helper()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, kernel.PolicyName), []byte(testPolicy), 0o600)
	k, err := kernel.Open(context.Background(), kernel.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	api, err := httpapi.New(k, httpapi.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &daemon{k: k, srv: srv, api: ClientAPI{C: &client.Client{Base: srv.URL, Token: token, HTTP: srv.Client()}}}
}

func (d *daemon) submit(t *testing.T, target string) *store.Approval {
	t.Helper()
	sub, err := d.k.Submit(context.Background(), &action.Action{Tool: "deploy", Agent: "codex", Session: "s-9",
		Args: map[string]any{"target": target}})
	if err != nil || sub.Approval == nil {
		t.Fatalf("submit: %v", err)
	}
	return sub.Approval
}

func (d *daemon) status(t *testing.T, id string) *store.Approval {
	t.Helper()
	apr, err := d.k.Gate.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return apr
}

// run applies msg and then every message its commands produce, except the
// timers (ticks), until nothing is left.
func run(t *testing.T, m Model, msg tea.Msg) Model {
	t.Helper()
	queue := []tea.Msg{msg}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 50 {
			t.Fatal("the model does not settle")
		}
		next, cmd := m.Update(queue[0])
		m = next.(Model)
		queue = queue[1:]
		queue = append(queue, expand(cmd)...)
	}
	return m
}

// expand runs a command and returns its messages; ticks are dropped. The
// models under test schedule their timers through noTimer, so every
// command returns (a hang is the test binary's timeout).
func expand(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	switch msg := msg.(type) {
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, expand(c)...)
		}
		return out
	case tickMsg:
		return nil
	case nil:
		return nil
	default:
		return []tea.Msg{msg}
	}
}

func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

func typeText(t *testing.T, m Model, s string) Model {
	for _, r := range s {
		m = run(t, m, key(string(r)))
	}
	return m
}

func screen(m Model) string { return ansi.Strip(m.render()) }

// noTimer fires a timer at once: the tests drive refreshes themselves, and
// expand drops the tick it yields.
func noTimer(_ time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
	return func() tea.Msg { return fn(time.Now()) }
}

func newModel(t *testing.T, d *daemon) Model {
	m := New(context.Background(), d.api, Options{Who: "ann", Title: "test"})
	m.after = noTimer
	m = run(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	return run(t, m, m.Init()())
}

func TestQueueAndAnswers(t *testing.T) {
	d := newDaemon(t)
	a1 := d.submit(t, "prod")
	a2 := d.submit(t, "staging")
	m := newModel(t, d)

	s := screen(m)
	for _, want := range []string{"2 waiting", "● live", "target=prod", "target=staging", "Request " + a1.ID,
		"Deploys need a person", "Remember: once", "asked a person: " + a2.ID} {
		if !strings.Contains(s, want) {
			t.Fatalf("screen lacks %q:\n%s", want, s)
		}
	}

	t.Run("j moves, d asks for a reason, Enter denies", func(t *testing.T) {
		m = run(t, m, key("j"))
		if !strings.Contains(screen(m), "Request "+a2.ID) {
			t.Fatalf("selection did not move:\n%s", screen(m))
		}
		m = run(t, m, key("d"))
		m = typeText(t, m, "use ./build instead")
		if !strings.Contains(screen(m), "reason or instruction for the agent: use ./build instead") {
			t.Fatalf("the reason is not shown:\n%s", screen(m))
		}
		m = run(t, m, key("enter"))
		got := d.status(t, a2.ID)
		if got.Status != store.StatusDenied || got.Answer.Reason != "use ./build instead" || got.Answer.Channel != Channel || got.Answer.Who != "ann" {
			t.Fatalf("approval %s %+v", got.Status, got.Answer)
		}
		if s := screen(m); !strings.Contains(s, "1 waiting") || !strings.Contains(s, a2.ID+": denied") {
			t.Fatalf("screen after deny:\n%s", s)
		}
	})
	t.Run("Esc cancels a deny", func(t *testing.T) {
		m = run(t, m, key("d"))
		m = typeText(t, m, "no")
		m = run(t, m, key("esc"))
		if got := d.status(t, a1.ID); got.Status != store.StatusPending {
			t.Fatalf("a cancelled deny answered: %s", got.Status)
		}
	})
	t.Run("r remembers as a rule, a approves", func(t *testing.T) {
		m = run(t, m, key("r"))
		m = run(t, m, key("r"))
		s := screen(m)
		if !strings.Contains(s, "Remember: rule") || !strings.Contains(s, `"args_hash":"`+a1.ArgsHash+`"`) {
			t.Fatalf("the proposed rule is not shown:\n%s", s)
		}
		m = run(t, m, key("a"))
		if got := d.status(t, a1.ID); got.Status != store.StatusApproved || got.Answer.Remember != "rule" {
			t.Fatalf("approval %s %+v", got.Status, got.Answer)
		}
		rules, _ := d.k.Store.ListUserRules(context.Background(), time.Now())
		if len(rules) != 1 || !strings.Contains(string(rules[0].Rule), a1.ArgsHash) {
			t.Fatalf("rules %+v", rules)
		}
		if !strings.Contains(screen(m), "Nothing is waiting") {
			t.Fatalf("queue not empty:\n%s", screen(m))
		}
	})
	t.Run("the audit tail follows new records", func(t *testing.T) {
		a3 := d.submit(t, "dev")
		m = run(t, m, tickMsg(time.Now()))
		s := screen(m)
		if !strings.Contains(s, "asked a person: "+a3.ID) || !strings.Contains(s, "deny by ann via tui: use ./build instead") {
			t.Fatalf("tail:\n%s", s)
		}
	})
	t.Run("help", func(t *testing.T) {
		m = run(t, m, key("?"))
		if !strings.Contains(screen(m), "abort the agent's task") {
			t.Fatalf("help:\n%s", screen(m))
		}
		m = run(t, m, key("x")) // any key goes back, and answers nothing
		if strings.Contains(screen(m), "abort the agent's task") {
			t.Fatal("help did not close")
		}
	})
}

func TestOfflineAnswersNothing(t *testing.T) {
	d := newDaemon(t)
	apr := d.submit(t, "prod")
	m := newModel(t, d)
	d.srv.Close() // the daemon goes away
	m = run(t, m, key("a"))
	s := screen(m)
	if !strings.Contains(s, "approve "+apr.ID+" failed") {
		t.Fatalf("screen:\n%s", s)
	}
	m = run(t, m, tickMsg(time.Now()))
	if !strings.Contains(screen(m), "● offline") {
		t.Fatalf("screen:\n%s", screen(m))
	}
	if got := d.status(t, apr.ID); got.Status != store.StatusPending {
		t.Fatalf("status %s", got.Status)
	}
}

func TestAlreadyAnswered(t *testing.T) {
	d := newDaemon(t)
	apr := d.submit(t, "prod")
	m := newModel(t, d)
	if _, _, err := d.k.Answer(context.Background(), apr.ID, store.Answer{Decision: "deny", Who: "bob", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	m = run(t, m, key("a")) // the screen still showed it
	if !strings.Contains(screen(m), "was already denied") {
		t.Fatalf("screen:\n%s", screen(m))
	}
	if got := d.status(t, apr.ID); got.Status != store.StatusDenied {
		t.Fatalf("status %s", got.Status)
	}
}

// slowAPI answers like a daemon on a loaded machine.
type slowAPI struct {
	API
	delay time.Duration
}

func (s slowAPI) Answer(ctx context.Context, id, decision string, req client.AnswerRequest) (*client.AnswerResponse, error) {
	time.Sleep(s.delay)
	return s.API.Answer(ctx, id, decision, req)
}

// A slow answer is still an answer: the UI shows its outcome once it comes,
// however long the durable write took.
func TestSlowAnswerIsApplied(t *testing.T) {
	d := newDaemon(t)
	apr := d.submit(t, "prod")
	d.api = slowAPI{API: d.api, delay: 600 * time.Millisecond}
	m := newModel(t, d)
	m = run(t, m, key("a"))
	if got := d.status(t, apr.ID); got.Status != store.StatusApproved {
		t.Fatalf("status %s", got.Status)
	}
	if s := screen(m); !strings.Contains(s, apr.ID+": approved") || !strings.Contains(s, "Nothing is waiting") {
		t.Fatalf("screen:\n%s", s)
	}
}

func TestProposalsView(t *testing.T) {
	d := newDaemon(t)
	ctx := context.Background()
	for range 3 {
		sub, err := d.k.Submit(ctx, &action.Action{Tool: "Bash", Agent: "codex", Session: "s-9", Cwd: "/work/app",
			Args: map[string]any{"command": "mytool sync --all"}})
		if err != nil || sub.Approval == nil {
			t.Fatalf("submit: %v %+v", err, sub)
		}
		if _, _, err := d.k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	m := newModel(t, d)
	if s := screen(m); !strings.Contains(s, "1 rule proposed (p)") {
		t.Fatalf("header:\n%s", s)
	}
	m = run(t, m, key("p"))
	s := screen(m)
	for _, want := range []string{"Proposed rules", "mytool sync [--all] in /work/app", "would have saved 3 prompt(s)", "A accept"} {
		if !strings.Contains(s, want) {
			t.Fatalf("screen lacks %q:\n%s", want, s)
		}
	}
	m = run(t, m, key("A"))
	if s := screen(m); !strings.Contains(s, "accepted") {
		t.Fatalf("after A:\n%s", s)
	}
	rules, err := d.k.Store.ListUserRules(ctx, time.Now())
	if err != nil || len(rules) != 1 || rules[0].CreatedBy != "ann" {
		t.Fatalf("rules: %v %+v", err, rules)
	}
	m = run(t, m, key("esc"))
	if s := screen(m); !strings.Contains(s, "Waiting for you") {
		t.Fatalf("back to the queue:\n%s", s)
	}
}

// TestRequestShowsWhereAndWho: every request shows its working directory,
// agent, session and age (from the injected clock), and the selected one
// says where it runs before what it runs, and who holds the call.
func TestRequestShowsWhereAndWho(t *testing.T) {
	d := newDaemon(t)
	ctx := context.Background()
	sub, err := d.k.SubmitBy(ctx, &action.Action{Tool: "Bash", Agent: "claude-code", Session: "8f2c1a9e-0b1d-4a6c-9e55-1f0c2a3b4c5d",
		Cwd: "/home/ann/work/very/deep/project/tree/app", Args: map[string]any{"command": "rm -rf ./tmp_*"}},
		&store.Asker{Kind: "hook", PID: 4242})
	if err != nil || sub.Approval == nil {
		t.Fatalf("submit: %v %+v", err, sub)
	}
	d.submit(t, "prod") // no directory, no asker
	now := sub.Approval.CreatedAt.Add(2*time.Minute + 13*time.Second)
	m := New(ctx, d.api, Options{Who: "ann", Now: func() time.Time { return now }, Home: "/home/ann"})
	m.after = noTimer
	m = run(t, m, tea.WindowSizeMsg{Width: 160, Height: 40})
	m = run(t, m, m.Init()())
	s := screen(m)
	for _, want := range []string{
		"claude-code/8f2c1a9e-0b…  …work/very/deep/project/tree/app  waiting 2m13s",
		"codex/s-9  -  waiting",
		"In:  ~/work/very/deep/project/tree/app",
		"Run: rm -rf ./tmp_*",
		"Asked 2m13s ago by the agent's hook (process 4242)",
		"session 8f2c1a9e-0b1d-4a6c-9e55-1f0c2a3b4c5d",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	if strings.Index(s, "In:  ") > strings.Index(s, "Run: ") {
		t.Errorf("the directory should come before the command:\n%s", s)
	}
	// A withdrawn request leaves the queue; the tail says it was withdrawn.
	if _, _, err := d.k.Withdraw(ctx, sub.Approval.ID, "the agent's hook (process 4242) is gone"); err != nil {
		t.Fatal(err)
	}
	m = run(t, m, tickMsg(now))
	s = screen(m)
	if !strings.Contains(s, "1 waiting") || !strings.Contains(s, sub.Approval.ID+" withdrawn (not a refusal)") {
		t.Errorf("after the withdrawal:\n%s", s)
	}
}

// TestPausedAgents: a paused agent shows in the header with who paused it
// and why; U resumes it, recorded as the person.
func TestPausedAgents(t *testing.T) {
	d := newDaemon(t)
	ctx := context.Background()
	if err := d.k.PauseAgent(ctx, "codex", "too many deletes tonight", "rate-limit rl_x"); err != nil {
		t.Fatal(err)
	}
	m := newModel(t, d)
	if s := screen(m); !strings.Contains(s, "paused: codex") || !strings.Contains(s, "too many deletes tonight") || !strings.Contains(s, "U resumes it") {
		t.Fatalf("header:\n%s", s)
	}
	m = run(t, m, key("U"))
	if s := screen(m); !strings.Contains(s, "codex: resumed") || strings.Contains(s, "paused: codex") {
		t.Fatalf("after U:\n%s", s)
	}
	if p, _ := d.k.AgentPaused("codex"); p {
		t.Fatal("still paused")
	}
	recs, err := d.k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{kernel.TypeAgentResumed}})
	if err != nil || len(recs) != 1 || !strings.Contains(string(recs[0].Data), `"by":"ann"`) {
		t.Fatalf("resume record %v %+v", err, recs)
	}
	m = run(t, m, key("U"))
	if s := screen(m); !strings.Contains(s, "no agent is paused") {
		t.Fatalf("U with none paused:\n%s", s)
	}
}

// The live tail describes the audited mode's records; text read from a
// transcript loses its control characters.
func TestDescribeIngestedAndTrust(t *testing.T) {
	in := kernel.IngestedRecord{Ingested: true, Source: kernel.IngestSource{File: "/h/.claude/projects/p/s.jsonl", Line: 7},
		Action: action.Action{Tool: "Bash"}, Verdict: action.Verdict{Level: action.Block}}
	b, _ := json.Marshal(in)
	got := describe(store.AuditRecord{Type: "ingested", Tool: "Bash\x1b[2J", Data: b})
	if !strings.Contains(got, "ingested from s.jsonl:7") || !strings.Contains(got, "block") || strings.Contains(got, "\x1b[2J") {
		t.Fatalf("%q", got)
	}
	c, _ := json.Marshal(kernel.TrustChange{Agent: "bot", Op: "demote", From: kernel.ModeSupervised, To: kernel.ModeDelegated, Who: "overseer", Reason: "violation"})
	if got := describe(store.AuditRecord{Type: "trust", Data: c}); got != "bot demoted: supervised → delegated by overseer: violation" {
		t.Fatalf("%q", got)
	}
}
