package hooks

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// scripted is a Backend whose answers a test sets; the real kernel and
// daemon backends are tested in backend_test.go.
type scripted struct {
	mu      sync.Mutex
	decide  func(ctx context.Context, a *action.Action, opts DecideOptions) (Decision, error)
	keepErr error
	kept    []action.Action
	results []kernel.Result
}

func (s *scripted) Decide(ctx context.Context, a *action.Action, opts DecideOptions) (Decision, error) {
	if a.ID == "" {
		a.ID = kernel.NewID("act_")
	}
	return s.decide(ctx, a, opts)
}

func (s *scripted) Keep(_ context.Context, a *action.Action) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept = append(s.kept, *a)
	return s.keepErr
}

func (s *scripted) Record(_ context.Context, r kernel.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results = append(s.results, r)
	return nil
}

func allowAll(_ context.Context, a *action.Action, _ DecideOptions) (Decision, error) {
	return Decision{Outcome: Allow, Reason: "allowed (auto)", ActionID: a.ID, Level: action.Auto}, nil
}

func runner(t *testing.T, agent string, b Backend, connErr error) *Runner {
	t.Helper()
	tab, err := NewTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Runner{Agent: agent, Tools: tab, Home: t.TempDir(), MaxWait: time.Minute,
		Connect: func(context.Context) (Backend, func(), error) {
			if connErr != nil {
				return nil, nil, connErr
			}
			return b, func() {}, nil
		}}
}

type ran struct {
	code           int
	stdout, stderr string
}

func run(r *Runner, in string) ran {
	var out, errb bytes.Buffer
	code := r.Run(context.Background(), strings.NewReader(in), &out, &errb)
	return ran{code, out.String(), errb.String()}
}

const bashPre = `{"session_id":"s1","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash",` +
	`"tool_input":{"command":"echo hi"},"tool_use_id":"t1"}`

// isDeny reports whether the agent will not run the call: exit 2 with a
// reason, or a deny decision.
func isDeny(r ran) bool {
	if r.code == 2 {
		return strings.TrimSpace(r.stderr) != ""
	}
	return r.code == 0 && (strings.Contains(r.stdout, `"permissionDecision":"deny"`) ||
		strings.Contains(r.stdout, `"decision":"deny"`) || strings.Contains(r.stdout, `"behavior":"deny"`))
}

func TestRunFailsClosed(t *testing.T) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	tests := []struct {
		name    string
		in      string
		decide  func(ctx context.Context, a *action.Action, opts DecideOptions) (Decision, error)
		connErr error
		cfgErr  error
		keepErr error
		limit   time.Duration
		want    string // in the reason
	}{
		{name: "empty input", in: "", want: "no hook event"},
		{name: "not json", in: "hello", want: "not valid JSON"},
		{name: "json but not an object", in: `"PreToolUse"`, want: "not valid JSON"},
		{name: "unknown event", in: `{"hook_event_name":"SessionStart","tool_name":"Bash"}`, want: "unknown hook event"},
		{name: "no tool", in: `{"hook_event_name":"PreToolUse"}`, want: "no tool"},
		{name: "overseer unreachable", in: bashPre, connErr: errors.New("database is locked"), want: "cannot reach Overseer"},
		{name: "daemon fails mid-call", in: bashPre, want: "connection refused",
			decide: func(context.Context, *action.Action, DecideOptions) (Decision, error) {
				return Decision{}, errors.New("dial tcp 127.0.0.1:7777: connection refused")
			}},
		{name: "panic while deciding", in: bashPre, want: "panic",
			decide: func(context.Context, *action.Action, DecideOptions) (Decision, error) { panic("boom") }},
		{name: "timeout while waiting", in: bashPre, limit: 50 * time.Millisecond, want: "did not decide within",
			decide: func(ctx context.Context, _ *action.Action, _ DecideOptions) (Decision, error) {
				<-ctx.Done()
				return Decision{Outcome: Allow}, nil // too late: must not be used
			}},
		{name: "stuck backend ignoring its context", in: bashPre, limit: 50 * time.Millisecond, want: "did not decide within",
			decide: func(context.Context, *action.Action, DecideOptions) (Decision, error) {
				<-never
				return Decision{Outcome: Allow}, nil
			}},
		{name: "bad configuration", in: bashPre, cfgErr: ErrConfig, want: "invalid hooks configuration"},
		{name: "previous content not kept", keepErr: kernel.ErrNotKept, want: "previous content",
			in: `{"session_id":"s","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Write",` +
				`"tool_input":{"file_path":"x.txt","content":"y"},"tool_use_id":"t2"}`},
		{name: "undecided outcome", in: bashPre, want: "no reason given",
			decide: func(context.Context, *action.Action, DecideOptions) (Decision, error) { return Decision{}, nil }},
	}
	for _, agent := range Agents {
		for _, tc := range tests {
			t.Run(agent+"/"+tc.name, func(t *testing.T) {
				in := tc.in
				if agent == Gemini {
					in = strings.ReplaceAll(strings.ReplaceAll(in, "PreToolUse", "BeforeTool"), `"Bash"`, `"run_shell_command"`)
					in = strings.ReplaceAll(in, `"Write"`, `"write_file"`)
				}
				d := tc.decide
				if d == nil {
					d = allowAll
				}
				r := runner(t, agent, &scripted{decide: d, keepErr: tc.keepErr}, tc.connErr)
				r.ConfigErr, r.Deadline = tc.cfgErr, tc.limit
				got := run(r, in)
				if got.code != 0 && got.code != 2 {
					t.Fatalf("exit status %d: the agents run the call on any status but 0 and 2", got.code)
				}
				if !isDeny(got) {
					t.Fatalf("not denied: %+v", got)
				}
				if !strings.Contains(got.stdout+got.stderr, tc.want) {
					t.Fatalf("reason does not say %q: %+v", tc.want, got)
				}
			})
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestRunCannotWriteAnswerDenies(t *testing.T) {
	r := runner(t, ClaudeCode, &scripted{decide: allowAll}, nil)
	var errb bytes.Buffer
	code := r.Run(context.Background(), strings.NewReader(bashPre), failWriter{}, &errb)
	if code != 2 || !strings.Contains(errb.String(), "broken pipe") {
		t.Fatalf("code %d stderr %q", code, errb.String())
	}
}

func TestRunAllowsAndKeepsPreviousContent(t *testing.T) {
	b := &scripted{decide: allowAll}
	r := runner(t, ClaudeCode, b, nil)
	got := run(r, `{"session_id":"s","cwd":"/src/p","hook_event_name":"PreToolUse","tool_name":"Edit",`+
		`"tool_input":{"file_path":"src/a.go","old_string":"a","new_string":"b"},"tool_use_id":"t9"}`)
	if got.code != 0 || !strings.Contains(got.stdout, `"permissionDecision":"allow"`) {
		t.Fatalf("%+v", got)
	}
	if len(b.kept) != 1 || len(b.kept[0].Facts.Paths) != 1 || b.kept[0].Facts.Paths[0].Path != "/src/p/src/a.go" ||
		b.kept[0].Facts.Paths[0].Intent != action.PathWrite || b.kept[0].ID == "" {
		t.Fatalf("kept %+v", b.kept)
	}
	// A read keeps nothing.
	b.kept = nil
	run(r, `{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"a"},"tool_use_id":"t8"}`)
	if len(b.kept) != 0 {
		t.Fatalf("a read kept %+v", b.kept)
	}
}

func TestRunShellDeleteKeepsVictim(t *testing.T) {
	dir := t.TempDir()
	b := &scripted{decide: allowAll}
	r := runner(t, Codex, b, nil)
	got := run(r, `{"session_id":"s","cwd":"`+dir+`","hook_event_name":"PreToolUse","tool_name":"Bash",`+
		`"tool_input":{"command":"rm victim.txt"},"tool_use_id":"t3"}`)
	if got.code != 0 || got.stdout != "" {
		t.Fatalf("codex allow must be silent: %+v", got)
	}
	if len(b.kept) != 1 {
		t.Fatalf("kept %+v", b.kept)
	}
	var found bool
	for _, p := range b.kept[0].Facts.Paths {
		found = found || (p.Path == filepath.Join(dir, "victim.txt") && p.Intent == action.PathDelete)
	}
	if !found {
		t.Fatalf("the delete target is not among %+v", b.kept[0].Facts.Paths)
	}
}

func TestRunPostRecordsAndNeverBlocks(t *testing.T) {
	for _, agent := range Agents {
		t.Run(agent, func(t *testing.T) {
			name := map[string]string{ClaudeCode: "claude-code-post-bash.json", Codex: "codex-post-bash.json",
				Gemini: "gemini-after-shell.json"}[agent]
			b := &scripted{decide: allowAll}
			r := runner(t, agent, b, nil)
			if agent == Gemini {
				// Gemini sends no tool-use id: the pre event leaves the id for the post event.
				pre := strings.Replace(string(readEvent(t, name)), "AfterTool", "BeforeTool", 1)
				if got := run(r, pre); got.code != 0 {
					t.Fatalf("pre: %+v", got)
				}
			}
			got := run(r, string(readEvent(t, name)))
			if got.code != 0 || isDeny(got) {
				t.Fatalf("post blocked: %+v", got)
			}
			if len(b.results) != 1 || b.results[0].ActionID == "" && b.results[0].ClientID == "" || b.results[0].Output == "" || b.results[0].Agent != agent {
				t.Fatalf("results %+v", b.results)
			}
			// Unreachable Overseer: still exit 0.
			r2 := runner(t, agent, b, errors.New("gone"))
			if got := run(r2, string(readEvent(t, name))); got.code != 0 || isDeny(got) {
				t.Fatalf("post blocked when Overseer is unreachable: %+v", got)
			}
		})
	}
}

func TestResultOf(t *testing.T) {
	tests := []struct {
		file    string
		out     string
		isError bool
	}{
		{"claude-code-post-bash.json", "total 0", false},
		{"claude-code-post-failure.json", "Exit code 1", true},
		{"codex-post-bash.json", "test result: ok. 3 passed", false},
		{"gemini-after-shell.json", "built in 2s", false},
		{"gemini-after-error.json", `{"llmContent":"","returnDisplay":"","error":{"message":"File not found","type":"file_not_found"}}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			agent := ClaudeCode
			if strings.HasPrefix(tc.file, "codex") {
				agent = Codex
			} else if strings.HasPrefix(tc.file, "gemini") {
				agent = Gemini
			}
			ev, err := ParseEvent(agent, readEvent(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			out, isErr := ResultOf(ev)
			if out != tc.out || isErr != tc.isError {
				t.Fatalf("ResultOf = %q, %v; want %q, %v", out, isErr, tc.out, tc.isError)
			}
		})
	}
}

func TestRunAskOnlyWhereTheAgentCanAsk(t *testing.T) {
	askConfirm := func(_ context.Context, a *action.Action, o DecideOptions) (Decision, error) {
		if o.AskConfirm {
			return Decision{Outcome: Ask, Reason: "confirm", ActionID: a.ID}, nil
		}
		return Decision{Outcome: Deny, Reason: "held and denied", ActionID: a.ID}, nil
	}
	for _, tc := range []struct {
		agent, in, want string
	}{
		{ClaudeCode, bashPre, `"permissionDecision":"ask"`},
		{Codex, bashPre, `"permissionDecision":"deny"`},
		{Gemini, strings.ReplaceAll(bashPre, "PreToolUse", "BeforeTool"), `"decision":"ask"`},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			r := runner(t, tc.agent, &scripted{decide: askConfirm}, nil)
			r.Confirm = ConfirmAsk
			if got := run(r, tc.in); !strings.Contains(got.stdout, tc.want) {
				t.Fatalf("%+v, want %s", got, tc.want)
			}
		})
	}
}
