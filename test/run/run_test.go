package run

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/llmtest"
	"github.com/overseer-dev/overseer/internal/overseertest"
)

// env is one Overseer home and one working directory.
type env struct {
	t     *testing.T
	home  string
	work  string
	extra []string // environment
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, home: t.TempDir(), work: t.TempDir(), extra: []string{"ANTHROPIC_API_KEY=test-key", "OPENAI_API_KEY="}}
	if err := os.WriteFile(filepath.Join(e.work, "notes.txt"), []byte("alpha beta gamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// proc is a running overseer command.
type proc struct {
	cmd  *exec.Cmd
	out  *overseertest.SyncBuffer
	done chan struct{}
	code int
}

// start starts overseer with args in the working directory.
func (e *env) start(args ...string) *proc {
	e.t.Helper()
	p, _ := e.startIn(false, args...)
	return p
}

// startIn starts overseer, with a pipe to its standard input when withInput.
func (e *env) startIn(withInput bool, args ...string) (*proc, io.WriteCloser) {
	e.t.Helper()
	cmd := exec.Command(overseertest.Binary(e.t), append([]string{"--home", e.home}, args...)...)
	cmd.Dir = e.work
	cmd.Env = append(append(os.Environ(), "OVERSEER_HOME="+e.home), e.extra...)
	var in io.WriteCloser
	if withInput {
		var err error
		if in, err = cmd.StdinPipe(); err != nil {
			e.t.Fatal(err)
		}
	}
	p := &proc{cmd: cmd, out: &overseertest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		p.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		} else if err != nil {
			p.code = -1
		}
		close(p.done)
	}()
	e.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p, in
}

// wait waits for the command to end and returns its exit status.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("overseer did not end within %s; output so far:\n%s", d, p.out.String())
	}
	return -1
}

func (e *env) run(args ...string) overseertest.Result {
	e.t.Helper()
	return overseertest.Run(e.t, e.home, "", args...)
}

type approval struct {
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
}

// awaitApproval waits until an approval for tool is pending and returns
// its ID, failing when p ends first.
func (e *env) awaitApproval(p *proc, tool string) string {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r := e.run("approvals", "--json")
		var list []approval
		if r.Code == 0 && json.Unmarshal([]byte(r.Stdout), &list) == nil {
			for _, a := range list {
				if a.Tool == tool {
					return a.ID
				}
			}
		}
		select {
		case <-p.done:
			e.t.Fatalf("overseer ended (exit %d) before asking about %s:\n%s", p.code, tool, p.out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	e.t.Fatalf("no approval for %s appeared; output so far:\n%s", tool, p.out.String())
	return ""
}

// answer answers an approval through the CLI, as a person would.
func (e *env) answer(decision, id string, args ...string) {
	e.t.Helper()
	r := e.run(append([]string{decision, id, "--who", "alice"}, args...)...)
	if r.Code != 0 {
		e.t.Fatalf("overseer %s %s: exit %d\n%s%s", decision, id, r.Code, r.Stdout, r.Stderr)
	}
}

type taskJSON struct {
	ID       string `json:"id"`
	Goal     string `json:"goal"`
	Status   string `json:"status"`
	Step     int    `json:"step"`
	MaxSteps int    `json:"max_steps"`
	Usage    struct {
		InputTokens  int     `json:"input_tokens"`
		OutputTokens int     `json:"output_tokens"`
		CostUSD      float64 `json:"cost_usd"`
	} `json:"usage"`
	StepUsage []struct {
		Purpose string `json:"purpose"`
	} `json:"step_usage"`
	Steps []struct {
		N       int    `json:"n"`
		Tool    string `json:"tool"`
		Outcome string `json:"outcome"`
		Output  string `json:"output"`
		Human   string `json:"human"`
	} `json:"steps"`
	Plan *struct {
		Subtasks []struct {
			Title string `json:"title"`
			Done  bool   `json:"done"`
		} `json:"subtasks"`
	} `json:"plan"`
	Result string `json:"result"`
}

// tasks lists the tasks through the CLI.
func (e *env) tasks() []taskJSON {
	e.t.Helper()
	r := e.run("tasks", "--json")
	var list []taskJSON
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &list) != nil {
		e.t.Fatalf("overseer tasks --json: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	return list
}

func (e *env) verifyAudit() {
	e.t.Helper()
	if r := e.run("audit", "verify"); r.Code != 0 {
		e.t.Fatalf("audit verify: %s%s", r.Stdout, r.Stderr)
	}
}

// expect checks that the prompt of request n contains every want, and
// returns a failing reply when it does not.
func expect(t *testing.T, n int, req llmtest.Request, want ...string) (llmtest.Reply, bool) {
	for _, w := range want {
		if !strings.Contains(req.LastUser, w) && !strings.Contains(req.System, w) {
			t.Errorf("request %d: the prompt lacks %q; it was:\n%s\n%s", n, w, req.LastUser, req.Body)
			return llmtest.Fail("request %d: prompt lacks %q", n, w), false
		}
	}
	return llmtest.Reply{}, true
}

func decision(text string, d map[string]any) llmtest.Reply {
	return llmtest.Reply{Text: text + llmtest.Decision(d)}
}

func toolCall(tool string, args map[string]any, intent string) map[string]any {
	return map[string]any{"action": "tool_call", "tool": tool, "args": args, "intent": intent, "confidence": 0.9, "reason": intent}
}

func done(summary string) map[string]any {
	return map[string]any{"action": "done", "confidence": 0.95, "reason": summary}
}

// TestReadWriteWithOneApproval: OpenAI wire format. The model reads a file
// (auto), writes one outside the working tree (a person approves), and asks
// a person to confirm it is done. Retries honour 429 Retry-After and 503.
func TestReadWriteWithOneApproval(t *testing.T) {
	e := newEnv(t)
	outDir := t.TempDir()
	target := filepath.Join(outDir, "summary.txt")
	srv := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			return llmtest.Reply{Status: 429, RetryAfter: "1"}
		case 1:
			if r, ok := expect(t, n, req, "Summarise notes.txt", "file_read", "file_write"); !ok {
				return r
			}
			return decision("I will read the notes first.\n\n", toolCall("file_read", map[string]any{"file_path": "notes.txt"}, "read the notes"))
		case 2:
			return llmtest.Reply{Status: 503}
		case 3:
			if r, ok := expect(t, n, req, "alpha beta gamma"); !ok {
				return r
			}
			return decision("Now I write the summary.\n\n", toolCall("file_write",
				map[string]any{"file_path": target, "content": "ALPHA BETA GAMMA\n"}, "write the summary"))
		case 4:
			if r, ok := expect(t, n, req, "approved"); !ok {
				return r
			}
			return decision("The summary is written.\n\n", done("Wrote the summary to "+target))
		}
		return llmtest.Fail("request %d was not expected", n)
	}))
	p := e.start("run", "--no-plan", "--model", "openai:test-model@"+srv.URL, "Summarise notes.txt into "+target)
	e.answer("approve", e.awaitApproval(p, "file_write"))
	e.answer("approve", e.awaitApproval(p, "overseer.confirm_done"))
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out.String())
	}
	out := p.out.String()
	for _, w := range []string{"I will read the notes first.", "Now I write the summary.", "tokens", "done"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	for _, leak := range []string{"```decision", `"action"`} {
		if strings.Contains(out, leak) {
			t.Errorf("the decision block was echoed (%q):\n%s", leak, out)
		}
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "ALPHA BETA GAMMA\n" {
		t.Fatalf("summary file: %q %v", b, err)
	}
	if got := len(srv.Requests()); got != 5 {
		t.Errorf("the model got %d requests, want 5 (two of them retries)", got)
	}
	list := e.tasks()
	if len(list) != 1 || list[0].Status != "done" || list[0].Step != 3 || list[0].Usage.InputTokens == 0 {
		t.Fatalf("tasks: %+v", list)
	}
	e.verifyAudit()
}

// TestBlockAndAdapt: Anthropic wire format. A thinking loop is stopped and
// corrected, a destructive command is blocked and the constraint reaches
// the next prompt, a cut-off reply is retried once with a larger limit, a
// reply without a decision goes to a person whose words reach the model.
func TestBlockAndAdapt(t *testing.T) {
	e := newEnv(t)
	srv := llmtest.NewAnthropic(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			return llmtest.Reply{Thinking: strings.Repeat("hmm ", 600),
				Text: llmtest.Decision(toolCall("bash", map[string]any{"command": "ls"}, "list"))}
		case 1:
			if r, ok := expect(t, n, req, "stuck repeating"); !ok {
				return r
			}
			return decision("Let me clear out the home directory first.\n\n", toolCall("bash", map[string]any{"command": "cd /tmp && rm -rf ~"}, "clean up"))
		case 2:
			if r, ok := expect(t, n, req, "the firewall blocked bash"); !ok {
				return r
			}
			return llmtest.Reply{Text: "I will list the fi", CutOff: true}
		case 3:
			if req.MaxTokens <= 8192 {
				t.Errorf("request %d: max tokens %d, want the raised limit", n, req.MaxTokens)
			}
			return llmtest.Reply{Text: "I am not sure what to do next, so here are some words without a decision."}
		case 4:
			if r, ok := expect(t, n, req, "list the files with ls instead"); !ok {
				return r
			}
			return decision("Listing the files.\n\n", toolCall("bash", map[string]any{"command": "ls"}, "list the files"))
		case 5:
			if r, ok := expect(t, n, req, "notes.txt"); !ok {
				return r
			}
			return decision("", done("Listed the files: notes.txt"))
		}
		return llmtest.Fail("request %d was not expected", n)
	}))
	p := e.start("run", "--no-plan", "--model", "anthropic:claude-test@"+srv.URL, "Tidy up this directory")
	e.answer("approve", e.awaitApproval(p, "overseer.ask_human"), "--reason", "list the files with ls instead")
	e.answer("approve", e.awaitApproval(p, "overseer.confirm_done"))
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out.String())
	}
	out := p.out.String()
	for _, w := range []string{"reasoning is repeating itself", "blocked", "cut off", "no usable decision"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if _, err := os.Stat(filepath.Join(e.work, "notes.txt")); err != nil {
		t.Fatalf("the working tree was damaged: %v", err)
	}
	list := e.tasks()
	if len(list) != 1 || list[0].Status != "done" {
		t.Fatalf("tasks: %+v", list)
	}
	var outcomes []string
	for _, s := range list[0].Steps {
		outcomes = append(outcomes, s.Outcome)
	}
	if got := strings.Join(outcomes, ","); got != "blocked,invalid,ran,asked" {
		t.Errorf("step outcomes %s", got)
	}
	e.verifyAudit()
}

// TestStepBudgetAndResume: at the step limit the model summarises and the
// task pauses; a new process resumes it from the checkpoint; a process
// killed while a tool call waits for a person is resumed without asking
// the model or the person again: the answer given meanwhile lets exactly
// the call that was judged run.
func TestStepBudgetAndResume(t *testing.T) {
	e := newEnv(t)
	report := filepath.Join(t.TempDir(), "report.txt")
	srv := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			return decision("", toolCall("file_read", map[string]any{"file_path": "notes.txt"}, "read the notes"))
		case 1:
			return decision("", toolCall("bash", map[string]any{"command": "ls"}, "list the files"))
		case 2:
			if r, ok := expect(t, n, req, "step limit"); !ok {
				return r
			}
			return decision("Read the notes and listed the files; the report is still to be written.\n\n",
				map[string]any{"action": "ask_human", "confidence": 0.6, "reason": "step limit reached"})
		case 3:
			// A new process: the checkpoint brings back every earlier step.
			if r, ok := expect(t, n, req, "alpha beta gamma", "Read the notes and listed the files"); !ok {
				return r
			}
			return decision("", toolCall("file_write", map[string]any{"file_path": report, "content": "alpha beta gamma\n"}, "write the report"))
		case 4:
			if r, ok := expect(t, n, req, "alpha beta gamma", "write the report"); !ok {
				return r
			}
			return decision("", done("Wrote the report"))
		}
		return llmtest.Fail("request %d was not expected", n)
	}))
	p := e.start("run", "--no-plan", "--max-steps", "2", "--model", "openai:test-model@"+srv.URL, "Look at the notes")
	if code := p.wait(t, 60*time.Second); code != 3 {
		t.Fatalf("exit %d, want 3 (paused):\n%s", code, p.out.String())
	}
	list := e.tasks()
	if len(list) != 1 || list[0].Status != "paused" || list[0].Step != 3 || !strings.Contains(list[0].Result, "still to be written") {
		t.Fatalf("after the step limit: %+v", list)
	}
	id := list[0].ID

	// Resume in a new process; kill it while the write waits for a person.
	p = e.start("resume", "--max-steps", "10", id)
	apr := e.awaitApproval(p, "file_write")
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 10*time.Second)
	if l := e.tasks(); l[0].Status != "waiting_person" {
		t.Fatalf("after the kill: %+v", l[0])
	}
	if r := e.run("tasks"); !strings.Contains(r.Stdout, "(stopped)") {
		t.Fatalf("tasks does not show the runner is gone:\n%s", r.Stdout)
	}
	// The person answers while nothing runs.
	e.answer("approve", apr)
	if _, err := os.Stat(report); err == nil {
		t.Fatal("the write ran before the task was resumed")
	}

	// Resume again at once: a runner whose process is gone does not block
	// it, and the step goes on with the answer given meanwhile.
	p = e.start("resume", id[:10])
	e.answer("approve", e.awaitApproval(p, "overseer.confirm_done"))
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("resume exit %d:\n%s", code, p.out.String())
	}
	if b, err := os.ReadFile(report); err != nil || string(b) != "alpha beta gamma\n" {
		t.Fatalf("report: %q %v", b, err)
	}
	if n := len(srv.Requests()); n != 5 {
		t.Errorf("the model was asked %d times, want 5 (the interrupted step is not asked again)", n)
	}
	list = e.tasks()
	if list[0].Status != "done" || list[0].Steps[0].Output == "" || list[0].Steps[3].Outcome != "ran" {
		t.Fatalf("after resuming: %+v", list[0])
	}
	e.verifyAudit()
}

// TestMemoryRecalledAcrossTasks: what a finished task learnt is found by a
// later task, in Chinese and in English.
func TestMemoryRecalledAcrossTasks(t *testing.T) {
	e := newEnv(t)
	srv := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			return decision("记住了。\n\n", done("本项目的测试命令是 pytest -q"))
		case 1:
			return decision("", done("The deploy target is staging-eu"))
		case 2:
			if r, ok := expect(t, n, req, "pytest -q"); !ok {
				return r
			}
			return decision("", done("测试命令是 pytest -q"))
		case 3:
			if r, ok := expect(t, n, req, "staging-eu"); !ok {
				return r
			}
			return decision("", done("Deploying to staging-eu"))
		case 4:
			if r, ok := expect(t, n, req, "整理周报"); !ok {
				return r
			}
			return decision("", done("周报已整理"))
		}
		return llmtest.Fail("request %d was not expected", n)
	}))
	model := "openai:test-model@" + srv.URL
	for i, goal := range []string{"记住：本项目的测试命令是 pytest -q", "Remember: the deploy target is staging-eu",
		"运行本项目的测试命令", "Which deploy target should I use?"} {
		p := e.start("run", "--no-plan", "--model", model, goal)
		e.answer("approve", e.awaitApproval(p, "overseer.confirm_done"))
		if code := p.wait(t, 60*time.Second); code != 0 {
			t.Fatalf("task %d exit %d:\n%s", i, code, p.out.String())
		}
	}

	// A captured task waits in the inbox until it is run.
	r := e.run("tasks", "add", "整理周报")
	if r.Code != 0 || !strings.Contains(r.Stdout, "(inbox)") {
		t.Fatalf("tasks add: %s%s", r.Stdout, r.Stderr)
	}
	if r := e.run("tasks", "add", "--someday", "learn Rust"); r.Code != 0 {
		t.Fatalf("tasks add --someday: %s%s", r.Stdout, r.Stderr)
	}
	if r := e.run("tasks", "--status", "bogus"); r.Code != 2 || !strings.Contains(r.Stderr, "unknown status") {
		t.Fatalf("bad status: %d %s", r.Code, r.Stderr)
	}
	var inbox []taskJSON
	r = e.run("tasks", "--status", "inbox,someday", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &inbox); err != nil || len(inbox) != 2 {
		t.Fatalf("captured tasks: %v %s", err, r.Stdout)
	}
	var id string
	for _, tk := range inbox {
		if tk.Status == "inbox" {
			id = tk.ID
		}
	}
	p := e.start("resume", "--no-plan", "--model", model, id)
	e.answer("approve", e.awaitApproval(p, "overseer.confirm_done"))
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("captured task exit %d:\n%s", code, p.out.String())
	}
	if r := e.run("tasks", "show", id); r.Code != 0 || !strings.Contains(r.Stdout, "status: done") || !strings.Contains(r.Stdout, "周报已整理") {
		t.Fatalf("tasks show: %s%s", r.Stdout, r.Stderr)
	}
	if r := e.run("abort", id); r.Code == 0 || !strings.Contains(r.Stderr, "has ended") {
		t.Fatalf("aborting a done task: %d %s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestPlanRoutingAndAbort: a model configuration file routes planning and
// reflection to a second server (Anthropic) while the primary one (OpenAI)
// decides; the plan reaches the prompt, a finished subtask triggers a
// reflection, costs are estimated from the price table. Then a second task
// is aborted twice: the first abort stops after the step, the second at once.
func TestPlanRoutingAndAbort(t *testing.T) {
	e := newEnv(t)
	helper := llmtest.NewAnthropic(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		if n == 0 {
			return llmtest.Reply{Text: "```json\n{\"subtasks\": [\"read the notes\", \"report the words\"]}\n```"}
		}
		return llmtest.Reply{Text: `{"keep": true, "notes": "on track"}`}
	}))
	var release sync.Once
	gate := make(chan struct{})
	primary := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			if r, ok := expect(t, n, req, "read the notes", "report the words"); !ok {
				return r
			}
			d := toolCall("file_read", map[string]any{"file_path": "notes.txt"}, "read the notes")
			d["subtask_done"] = true
			return decision("", d)
		case 1:
			return decision("", done("The words are alpha, beta and gamma"))
		case 2:
			return decision("", toolCall("bash", map[string]any{"command": "ls"}, "list"))
		case 3:
			// Held until the test has asked for the second abort.
			<-gate
			return decision("", toolCall("bash", map[string]any{"command": "ls -a"}, "list all"))
		}
		return llmtest.Fail("request %d was not expected", n)
	}))
	t.Cleanup(func() { release.Do(func() { close(gate) }) })
	cfg := fmt.Sprintf(`{
  "default": {"plugin": "llm.openai", "config": {"model": "primary-model", "base_url": %q,
     "prices": {"primary-model": {"input_per_mtok": 3, "output_per_mtok": 15}}}},
  "routes": {
    "plan":     {"plugin": "llm.anthropic", "config": {"model": "helper-model", "base_url": %q}},
    "reflect":  {"plugin": "llm.anthropic", "config": {"model": "helper-model", "base_url": %q}},
    "compress": {"plugin": "llm.anthropic", "config": {"model": "helper-model", "base_url": %q}}
  }
}`, primary.URL, helper.URL, helper.URL, helper.URL)
	if err := os.WriteFile(filepath.Join(e.home, "llm.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := e.start("run", "Report the words in notes.txt")
	e.answer("approve", e.awaitApproval(p, "overseer.confirm_done"))
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out.String())
	}
	if got := len(helper.Requests()); got != 2 {
		t.Errorf("the helper model got %d requests, want 2 (plan, reflect)", got)
	}
	list := e.tasks()
	tk := list[0]
	if tk.Plan == nil || len(tk.Plan.Subtasks) != 2 || !tk.Plan.Subtasks[0].Done || tk.Usage.CostUSD <= 0 {
		t.Fatalf("plan, usage: %+v", tk)
	}
	purposes := map[string]bool{}
	for _, u := range tk.StepUsage {
		purposes[u.Purpose] = true
	}
	if !purposes["plan"] || !purposes["reflect"] || !purposes["decide"] {
		t.Errorf("usage per purpose: %+v", tk.StepUsage)
	}
	show := e.run("tasks", "show", tk.ID)
	for _, w := range []string{"usage by model:", "primary-model (decide):", "helper-model (plan, reflect):", "steps:"} {
		if !strings.Contains(show.Stdout, w) {
			t.Errorf("tasks show lacks %q:\n%s", w, show.Stdout)
		}
	}

	// Abort: the second task's second model call hangs until released.
	p = e.start("run", "--no-plan", "List things forever")
	var id string
	deadline := time.Now().Add(90 * time.Second) // a positive event: generous for a loaded machine
	for id == "" && time.Now().Before(deadline) {
		for _, tk := range e.tasks() {
			if tk.Status == "running" && tk.Step >= 1 {
				id = tk.ID
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if id == "" {
		t.Fatalf("the task did not start:\n%s", p.out.String())
	}
	if r := e.run("abort", id); r.Code != 0 || !strings.Contains(r.Stdout, "after its current step") {
		t.Fatalf("first abort: %s%s", r.Stdout, r.Stderr)
	}
	if r := e.run("abort", id); r.Code != 0 || !strings.Contains(r.Stdout, "now") {
		t.Fatalf("second abort: %s%s", r.Stdout, r.Stderr)
	}
	if code := p.wait(t, 90*time.Second); code != 2 {
		t.Fatalf("exit %d, want 2 (aborted):\n%s", code, p.out.String())
	}
	release.Do(func() { close(gate) })
	for _, tk := range e.tasks() {
		if tk.ID == id && tk.Status != "aborted" {
			t.Fatalf("aborted task: %+v", tk)
		}
	}
	// The task's lifecycle is in the audit log, with who asked to abort.
	r := e.run("audit", "export")
	var events []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var rec struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Type != "task" {
			continue
		}
		if d := rec.Data; d["task_id"] == id {
			ev := fmt.Sprint(d["event"], ":", d["status"])
			if w, _ := d["who"].(string); w != "" {
				ev += ":by-" + fmt.Sprint(d["channel"])
			}
			events = append(events, ev)
		}
	}
	want := "created:created,started:running,abort_requested:running:by-cli,abort_requested:running:by-cli,ended:aborted"
	if got := strings.Join(events, ","); got != want {
		t.Errorf("audit of the task: %s\nwant %s", got, want)
	}
	e.verifyAudit()
}

// TestAnswerInTheTerminal: the person answers where the task runs; a line
// typed before a question is not taken as its answer; the preview of what a
// wildcard removes is shown before the answer; "no, …" refuses with an
// instruction that reaches the model.
func TestAnswerInTheTerminal(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(t.TempDir(), "copy.txt")
	inside := filepath.Join(e.work, "copy.txt")
	build := filepath.Join(e.work, "build")
	if err := os.MkdirAll(build, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.o", "b.o"} {
		if err := os.WriteFile(filepath.Join(build, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			return decision("", toolCall("bash", map[string]any{"command": "rm -f ./build/*.o"}, "clean the build"))
		case 1:
			return decision("", toolCall("file_write", map[string]any{"file_path": outside, "content": "c"}, "write the copy"))
		case 2:
			if r, ok := expect(t, n, req, "write it inside the project"); !ok {
				return r
			}
			return decision("", toolCall("file_write", map[string]any{"file_path": inside, "content": "c"}, "write the copy inside"))
		case 3:
			return decision("", done("copied"))
		}
		return llmtest.Fail("request %d was not expected", n)
	}))
	p, pw := e.startIn(true, "run", "--answer-here", "--no-plan", "--model", "openai:test-model@"+srv.URL, "Copy a file")
	defer pw.Close()
	say := func(line string) {
		t.Helper()
		if _, err := io.WriteString(pw, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	say("y") // a stray yes typed before anything was asked
	e.awaitApproval(p, "bash")
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(build, "a.o")); err != nil {
		t.Fatal("a line typed before the question approved it")
	}
	if out := p.out.String(); !strings.Contains(out, "Preview: rm would remove 2 path(s)\n     build/a.o\n     build/b.o\n") {
		t.Fatalf("the preview is not shown before the answer:\n%s", out)
	}
	say("y")
	e.awaitApproval(p, "file_write")
	if left, _ := filepath.Glob(filepath.Join(build, "*.o")); len(left) != 0 {
		t.Fatalf("the approved rm left %v", left)
	}
	say("no, write it inside the project")
	e.awaitApproval(p, "overseer.confirm_done")
	say("y")
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out.String())
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the refused write happened")
	}
	if _, err := os.Stat(inside); err != nil {
		t.Fatalf("the write inside did not happen: %v", err)
	}
	out := p.out.String()
	for _, w := range []string{"or answer here", "via terminal: no, write it inside the project"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "denied: denied") {
		t.Errorf("the refusal repeats itself:\n%s", out)
	}
}
