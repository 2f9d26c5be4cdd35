package agent_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/agent"
	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/llmtest"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/plugin"
	"github.com/overseer-dev/overseer/plugins/context/standard"
	"github.com/overseer-dev/overseer/plugins/llm/openai"
	memsqlite "github.com/overseer-dev/overseer/plugins/memory/sqlite"
	"github.com/overseer-dev/overseer/plugins/tool/builtin"
)

// harness is a real kernel, the builtin tools, the standard context, a
// memory file and a scripted OpenAI-compatible server, with a person who
// answers every approval with the next of their answers.
type harness struct {
	k    *kernel.Kernel
	ts   *task.Store
	mem  *memsqlite.Memory
	out  *bytes.Buffer
	loop *agent.Loop
	srv  *llmtest.Server
	work string

	mu      sync.Mutex
	answers []store.Answer
	asked   []*store.Approval
	hold    chan struct{} // while set and open, the person answers nothing
}

func newHarness(t *testing.T, script llmtest.Script, v agent.Validator) *harness {
	t.Helper()
	srv := llmtest.NewOpenAI(t, script)
	llm, err := openai.New(openai.Config{Model: "m", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessLLM(t, llm, v)
	h.srv = srv
	return h
}

// newHarnessLLM is newHarness with a model of the test's.
func newHarnessLLM(t *testing.T, llm plugin.LLM, v agent.Validator) *harness {
	t.Helper()
	ctx := context.Background()
	h := &harness{out: &bytes.Buffer{}, work: t.TempDir()}
	var err error
	h.k, err = kernel.Open(ctx, kernel.Config{Home: t.TempDir(), Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.k.Close() })
	h.ts = task.NewStore(h.k.Store, nil)
	h.mem, err = memsqlite.Open(filepath.Join(t.TempDir(), "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.mem.Close() })
	tools, err := builtin.New(builtin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h.loop, err = agent.New(ctx, agent.Config{Kernel: h.k, Tasks: h.ts, LLM: llm, Tools: []plugin.Tool{tools},
		Context: standard.New(standard.Config{}), Memory: h.mem, Validator: v, Out: h.out,
		Heartbeat: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.work, "notes.txt"), []byte("alpha beta gamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go h.person(pctx)
	return h
}

// person answers pending approvals in order with the scripted answers;
// with none left it approves.
func (h *harness) person(ctx context.Context) {
	for ctx.Err() == nil {
		h.mu.Lock()
		hold := h.hold
		h.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			default:
				time.Sleep(10 * time.Millisecond)
				continue
			}
		}
		list, err := h.k.Store.ListApprovals(ctx, store.ApprovalFilter{Status: store.StatusPending})
		if err == nil {
			for _, apr := range list {
				h.mu.Lock()
				ans := store.Answer{Decision: "approve", Who: "alice", Channel: "test"}
				if len(h.answers) > 0 {
					ans, h.answers = h.answers[0], h.answers[1:]
				}
				h.asked = append(h.asked, apr)
				h.mu.Unlock()
				_, _, _ = h.k.Answer(ctx, apr.ID, ans)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) run(t *testing.T, goal string) *task.Task {
	t.Helper()
	tk := &task.Task{Goal: goal, Budget: 10, MaxSteps: 10, Cwd: h.work, Planned: true}
	if err := h.ts.Create(context.Background(), tk); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got, err := h.loop.Run(ctx, tk.ID, agent.Options{})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, h.out)
	}
	return got
}

func reply(text string, d map[string]any) llmtest.Reply {
	return llmtest.Reply{Text: text + llmtest.Decision(d)}
}

func call(tool string, args map[string]any, intent string, confidence float64) map[string]any {
	return map[string]any{"action": "tool_call", "tool": tool, "args": args, "intent": intent, "confidence": confidence}
}

var doneDecision = map[string]any{"action": "done", "confidence": 0.9, "reason": "finished"}

func lacks(t *testing.T, n int, req llmtest.Request, want string) bool {
	if !strings.Contains(req.LastUser, want) {
		t.Errorf("request %d: prompt lacks %q:\n%s", n, want, req.LastUser)
		return true
	}
	return false
}

// TestValidatorDuplicatesAndDeviation: a rejected reply is asked again with
// the reason; duplicate text blocks are dropped and corrected; a result
// that does not match its intent is flagged to the model.
func TestValidatorDuplicatesAndDeviation(t *testing.T) {
	validator := func(reply string) error {
		if strings.Contains(reply, "FORBIDDEN") {
			return errors.New("the reply mentions FORBIDDEN")
		}
		return nil
	}
	h := newHarness(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			return reply("FORBIDDEN plan.\n\n", call("file_read", map[string]any{"file_path": "notes.txt"}, "read the notes", 0.9))
		case 1:
			if lacks(t, n, req, "the reply mentions FORBIDDEN") {
				return llmtest.Fail("no rejection reason")
			}
			return reply("Reading.\n\nReading.\n\n", call("bash", map[string]any{"command": "true"}, "find the database password", 0.9))
		case 2:
			if lacks(t, n, req, "repeated the same block") || lacks(t, n, req, "does not match its stated intent") {
				return llmtest.Fail("no correction")
			}
			return reply("", doneDecision)
		}
		return llmtest.Fail("request %d was not expected", n)
	}), validator)
	tk := h.run(t, "look around")
	if tk.Status != task.Done {
		t.Fatalf("status %s\n%s", tk.Status, h.out)
	}
	out := h.out.String()
	for _, w := range []string{"rejected (1 of 3)", "repeated 1 block", "does not match its stated intent"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if tk.Steps[0].Tool != "bash" || tk.Steps[0].Thought != "Reading." {
		t.Errorf("first step: %+v", tk.Steps[0])
	}
}

// TestRejectionCapAsksPerson: replies the validator keeps rejecting bring a
// person in after the cap, whose words reach the model.
func TestRejectionCapAsksPerson(t *testing.T) {
	h := newHarness(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		if n < 3 {
			return reply("bad ", call("file_read", map[string]any{"file_path": "notes.txt"}, "read", 0.9))
		}
		if lacks(t, n, req, "A person says: stop reading and finish") {
			return llmtest.Fail("no person's words")
		}
		return reply("good ", doneDecision)
	}), func(r string) error {
		if strings.HasPrefix(r, "bad") {
			return errors.New("starts badly")
		}
		return nil
	})
	h.answers = []store.Answer{{Decision: "approve", Who: "alice", Channel: "test", Reason: "stop reading and finish"}}
	tk := h.run(t, "read")
	if tk.Status != task.Done || tk.Steps[0].Outcome != plugin.OutcomeRejected {
		t.Fatalf("status %s steps %+v\n%s", tk.Status, tk.Steps, h.out)
	}
	if len(h.srv.Requests()) != 4 {
		t.Errorf("requests: %d", len(h.srv.Requests()))
	}
}

// TestLowConfidenceAndPreferences: low confidence three times in a row
// brings a person in (L5); refusals become constraints; what the person's
// answers say about a tool is kept in memory for later tasks.
func TestLowConfidenceAndPreferences(t *testing.T) {
	read := func(n int, c float64) llmtest.Reply {
		// Different lines each time, so L2's loop detection stays out of it.
		return reply("", call("file_read", map[string]any{"file_path": "notes.txt", "offset": n + 1}, "read the notes", c))
	}
	h := newHarness(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0, 1:
			return read(n, 0.2)
		case 2:
			return read(n, 0.2) // the third low one in a row: a person is asked, and refuses
		case 3:
			if lacks(t, n, req, "the person refused file_read") || lacks(t, n, req, "not like that") {
				return llmtest.Fail("no constraint")
			}
			return read(n, 0.3) // still low: asked again, refused again
		case 4:
			return reply("", doneDecision)
		}
		return llmtest.Fail("request %d was not expected", n)
	}), nil)
	no := store.Answer{Decision: "deny", Who: "alice", Channel: "test", Reason: "not like that"}
	h.answers = []store.Answer{no, no}
	tk := h.run(t, "read the notes")
	if tk.Status != task.Done {
		t.Fatalf("status %s\n%s", tk.Status, h.out)
	}
	var outcomes []string
	for _, s := range tk.Steps {
		outcomes = append(outcomes, s.Outcome)
	}
	if got := strings.Join(outcomes, ","); got != "ran,ran,denied,denied,asked" {
		t.Fatalf("outcomes %s\n%s", got, h.out)
	}
	want := []string{`step 3: alice refused file_read: "not like that"`, `step 4: alice refused file_read: "not like that"`,
		"step 5: alice confirmed the task is done"}
	if got := strings.Join(tk.HumanDecisions, "|"); got != strings.Join(want, "|") {
		t.Fatalf("people's decisions:\n%q\nwant\n%q", tk.HumanDecisions, want)
	}
	h.mu.Lock()
	first := h.asked[0]
	h.mu.Unlock()
	if first.Verdict.Decider == nil || first.Verdict.Decider.Name != "low-confidence" {
		t.Fatalf("the first question was not brought by low confidence: %+v", first.Verdict.Decider)
	}
	items, err := h.mem.Search(context.Background(), "Approval preference file_read", 5)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range items {
		if it.Category == "preference" && strings.Contains(it.Content, "often refuses file_read") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no preference kept in memory: %+v", items)
	}
}

// TestUnknownToolAndBlock: a tool that does not exist never runs anything
// and the model is told; a hard-guard block is a constraint in the next
// prompt; neither reaches a person.
func TestUnknownToolAndBlock(t *testing.T) {
	h := newHarness(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			return reply("", call("shell_exec", map[string]any{"cmd": "rm -rf /"}, "clean", 0.9))
		case 1:
			if lacks(t, n, req, `no tool named "shell_exec"`) {
				return llmtest.Fail("not told")
			}
			return reply("", call("bash", map[string]any{"command": "rm -rf / --no-preserve-root"}, "clean", 0.9))
		case 2:
			if lacks(t, n, req, "the firewall blocked bash") {
				return llmtest.Fail("no constraint")
			}
			return reply("", doneDecision)
		}
		return llmtest.Fail("request %d was not expected", n)
	}), nil)
	tk := h.run(t, "clean up")
	if tk.Status != task.Done || tk.Steps[0].Outcome != plugin.OutcomeError || tk.Steps[1].Outcome != plugin.OutcomeBlocked {
		t.Fatalf("status %s steps %+v\n%s", tk.Status, tk.Steps, h.out)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.asked) != 1 || h.asked[0].Tool != kernel.ConfirmDoneTool {
		t.Fatalf("a person was asked about something else: %d questions", len(h.asked))
	}
}

// TestStoreFailureFailsClosed: when the kernel's database goes away in the
// middle of a task, nothing the model asked for runs and the run ends with
// an error instead of carrying on unrecorded.
func TestStoreFailureFailsClosed(t *testing.T) {
	var h *harness
	h = newHarness(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		if n == 0 {
			// The database fails while the model is thinking.
			h.k.Store.Close()
			return reply("", call("file_write", map[string]any{"file_path": "out.txt", "content": "x"}, "write", 0.9))
		}
		return reply("", doneDecision)
	}), nil)
	tk := &task.Task{Goal: "write a file", Budget: 5, MaxSteps: 5, Cwd: h.work, Planned: true}
	if err := h.ts.Create(context.Background(), tk); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := h.loop.Run(ctx, tk.ID, agent.Options{})
	if err == nil {
		t.Fatalf("the run went on without its database:\n%s", h.out)
	}
	if _, serr := os.Stat(filepath.Join(h.work, "out.txt")); serr == nil {
		t.Fatalf("the write ran although it could not be judged and recorded:\n%s", h.out)
	}
}

// TestAbortWithdrawsTheRequest: aborting a task that waits for a person —
// running or not — takes its request out of the approvals queue, without
// counting as the person's refusal.
func TestAbortWithdrawsTheRequest(t *testing.T) {
	ctx := context.Background()
	t.Run("not running", func(t *testing.T) {
		h := newHarness(t, llmtest.Queue(), nil)
		h.mu.Lock()
		h.hold = make(chan struct{}) // nobody answers
		h.mu.Unlock()
		sub, err := h.k.Ask(ctx, &action.Action{Agent: agent.AgentName, Session: "s", Tool: kernel.AskTool}, "which file?")
		if err != nil {
			t.Fatal(err)
		}
		tk := &task.Task{Goal: "g", Status: task.WaitingPerson, Pending: sub.Approval.ID}
		if err := h.ts.Create(ctx, tk); err != nil {
			t.Fatal(err)
		}
		got, err := agent.Abort(ctx, h.k, h.ts, tk.ID, "bob", "cli")
		if err != nil || got.Status != task.Aborted {
			t.Fatalf("abort: %v %+v", err, got)
		}
		apr, err := h.k.Store.GetApproval(ctx, sub.Approval.ID)
		if err != nil {
			t.Fatal(err)
		}
		if apr.Status != store.StatusWithdrawn || apr.Answer == nil || apr.Answer.Who != "withdrawn" {
			t.Fatalf("request not withdrawn: %+v", apr)
		}
	})
	t.Run("running and waiting", func(t *testing.T) {
		h := newHarness(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
			return reply("", map[string]any{"action": "ask_human", "confidence": 0.5, "reason": "which file?"})
		}), nil)
		h.answers = nil
		stopPerson := make(chan struct{})
		h.mu.Lock()
		h.hold = stopPerson // nobody answers
		h.mu.Unlock()
		tk := &task.Task{Goal: "g", Budget: 5, MaxSteps: 5, Cwd: h.work, Planned: true}
		if err := h.ts.Create(ctx, tk); err != nil {
			t.Fatal(err)
		}
		done := make(chan *task.Task, 1)
		go func() {
			got, _ := h.loop.Run(ctx, tk.ID, agent.Options{})
			done <- got
		}()
		var pending string
		for deadline := time.Now().Add(60 * time.Second); pending == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if cur, err := h.ts.Get(ctx, tk.ID); err == nil {
				pending = cur.Pending
			}
		}
		if pending == "" {
			t.Fatalf("the task never waited:\n%s", h.out)
		}
		for i := 0; i < 2; i++ {
			if _, err := agent.Abort(ctx, h.k, h.ts, tk.ID, "bob", "cli"); err != nil {
				t.Fatal(err)
			}
		}
		var got *task.Task
		select {
		case got = <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("the run did not stop:\n%s", h.out)
		}
		if got.Status != task.Aborted || got.PendingStep != nil {
			t.Fatalf("status %s pending step %+v", got.Status, got.PendingStep)
		}
		apr, _ := h.k.Store.GetApproval(ctx, pending)
		if apr.Status != store.StatusWithdrawn || apr.Answer.Who != "withdrawn" {
			t.Fatalf("request not withdrawn: %+v", apr.Answer)
		}
		close(stopPerson)
	})
}

// TestRefusedCallIsNotAskedAgain: a model that repeats a call the person
// refused is refused at once with the person's words, and stopped when it
// keeps trying; the person is asked once.
func TestRefusedCallIsNotAskedAgain(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "elsewhere.txt")
	h := newHarness(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		if n == 2 && lacks(t, n, req, "not outside the project") {
			return llmtest.Fail("the refusal's words did not reach the model")
		}
		if n >= 6 {
			return reply("", doneDecision)
		}
		return reply("", call("file_write", map[string]any{"file_path": outside, "content": "x"}, "write the report", 0.9))
	}), nil)
	h.answers = []store.Answer{{Decision: "deny", Who: "alice", Channel: "test", Reason: "not outside the project"}}
	tk := h.run(t, "write the report")
	h.mu.Lock()
	asked := len(h.asked)
	h.mu.Unlock()
	if asked != 1 {
		t.Fatalf("the person was asked %d times\n%s", asked, h.out)
	}
	if tk.Status != task.Paused || !strings.Contains(tk.Result, "kept repeating a call a person refused") {
		t.Fatalf("status %s result %q\n%s", tk.Status, tk.Result, h.out)
	}
	if n := len(tk.Steps); n != 3 || tk.Steps[1].Outcome != plugin.OutcomeBlocked || tk.Steps[2].Outcome != plugin.OutcomeBlocked {
		t.Fatalf("steps %+v\n%s", tk.Steps, h.out)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the refused write ran")
	}
}
