package watch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/frontend/hooks"
	"github.com/overseer-dev/overseer/internal/kernel"
)

const judgePolicy = `version: 1
rules:
  - name: t-touch-auto
    kind: shell
    when: 'args.command.startsWith("touch ")'
    level: auto
  - name: t-mkdir-confirm
    kind: shell
    when: 'args.command.startsWith("mkdir ")'
    level: confirm
  - name: t-victim-block
    kind: shell
    when: 'args.command.contains("victim")'
    level: block
    message: the victim is protected
`

// TestHookJudgeWithoutDaemon: with no daemon (the kernel in this process
// on the same database), auto is answered yes and block no, and anything
// that needs a person is left on screen — there is nobody to ask — as is a
// prompt that was not read whole, even when its call alone would be auto.
func TestHookJudgeWithoutDaemon(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, kernel.PolicyName), []byte(judgePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	b := hooks.NewAuto(home, func(ctx context.Context) (*kernel.Kernel, error) {
		return kernel.Open(ctx, kernel.Config{Home: home})
	})
	t.Cleanup(b.Close)
	j := &HookJudge{B: b, MaxWait: time.Second}
	proj := t.TempDir()
	for _, tc := range []struct {
		command    string
		incomplete bool
		want       Answer
	}{
		{"touch made.txt", false, Yes},
		{"touch made.txt", true, Leave},
		{"mkdir new-dir", false, Leave},
		{"rm -rf victim", false, No},
		{"rm -rf victim", true, No},
	} {
		p := &Prompt{Agent: "claude-code", Tool: "Bash", Kind: action.KindShell, Args: map[string]any{"command": tc.command}}
		if tc.incomplete {
			p.Incomplete = "test"
		}
		a := p.Action()
		a.Cwd, a.Session = proj, "tmux/test/%1"
		r, err := j.Judge(context.Background(), a)
		if err != nil {
			t.Fatalf("%s: %v", tc.command, err)
		}
		if r.Answer != tc.want {
			t.Errorf("%s (incomplete %v): %s (%s: %s), want %s", tc.command, tc.incomplete, r.Answer, r.Level, r.Reason, tc.want)
		}
	}
}

// TestFileAndMCPPromptsJudgedAsHooks: the file writes, edits, patches and
// MCP calls read from recorded prompts are judged as the agents' hooks'
// calls are — the same level for the same call (the built-in policy: a
// write inside the working directory is notify, so the watcher answers
// yes; a rule names the MCP tool) — and the watcher's answer follows. The
// same prompts about a file in .git (where hooks run code) go to a person.
func TestFileAndMCPPromptsJudgedAsHooks(t *testing.T) {
	pol := "version: 1\nextends: builtin\nrules:\n  - name: t-echo-auto\n    kind: mcp\n    when: 'tool == \"mcp__everything__echo\"'\n    level: auto\n"
	table, err := hooks.NewTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	const proj = "/home/dev/proj" // the fixtures' working directory
	fx := fixtures(t)
	set := builtinSet(t)
	patch := func(body string) map[string]any {
		return map[string]any{"command": "*** Begin Patch\n" + body + "*** End Patch\n"}
	}
	for _, tc := range []struct {
		fixture, agent, tool string
		hookInput            map[string]any // what the agent's hook sends for the same call
		git                  string         // the screen's file name, to move it into .git (an MCP tool: renamed)
		want                 Answer
	}{
		{"claude-code-2.1.328/write-file.txt", "claude-code", "Write",
			map[string]any{"file_path": proj + "/notes.txt", "content": "hello\nworld\n"}, "notes.txt", Yes},
		{"claude-code-2.1.328/edit-file.txt", "claude-code", "Edit",
			map[string]any{"file_path": proj + "/old.txt", "old_string": "alpha", "new_string": "beta"}, "old.txt", Yes},
		{"codex-0.169.0/patch-add.txt", "codex", "apply_patch",
			patch("*** Add File: " + proj + "/notes.txt\n+hello\n+world\n"), "notes.txt", Yes},
		{"codex-0.169.0/patch-update.txt", "codex", "apply_patch",
			patch("*** Update File: " + proj + "/old.txt\n@@\n alpha\n-beta\n+BETA\n gamma\n"), "old.txt", Yes},
		{"gemini-0.61.0/mcp-echo.txt", "gemini", "mcp__everything__echo", map[string]any{"message": "hello"}, "echo", Yes},
		{"codex-0.169.0/mcp-echo.txt", "codex", "mcp__everything__echo", map[string]any{"message": "hello"}, "echo", Yes},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			// A home of its own: the calls of one case (the same file) do not
			// meet those of another.
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, kernel.PolicyName), []byte(pol), 0o600); err != nil {
				t.Fatal(err)
			}
			b := hooks.NewAuto(home, func(ctx context.Context) (*kernel.Kernel, error) {
				return kernel.Open(ctx, kernel.Config{Home: home})
			})
			t.Cleanup(b.Close)
			j := &HookJudge{B: b, MaxWait: time.Second}
			f := fx[tc.fixture]
			if f == nil {
				t.Fatalf("no fixture %s", tc.fixture)
			}
			judge := func(screen string) (*Prompt, Ruling) {
				t.Helper()
				sc := NewScreen(screen, f.Width, f.Height)
				p, ok := set.Recognise(sc, f.Process)
				if !ok {
					t.Fatal("not recognised")
				}
				a := p.Action()
				a.Cwd, a.Session = proj, "tmux/test/%1"
				r, err := j.Judge(context.Background(), a)
				if err != nil {
					t.Fatal(err)
				}
				return p, r
			}
			p, r := judge(f.Screen)
			if !p.Complete() || p.Tool != tc.tool {
				t.Fatalf("read %s %v (incomplete: %s)", p.Tool, p.Args, p.Incomplete)
			}
			hook := table.Action(&hooks.Event{Agent: tc.agent, ToolName: tc.tool, ToolInput: tc.hookInput, Cwd: proj, SessionID: "tmux/test/%1"})
			hr, err := j.Judge(context.Background(), hook)
			if err != nil {
				t.Fatal(err)
			}
			if r.Level != hr.Level || r.Answer != tc.want || hr.Answer != tc.want {
				t.Fatalf("the prompt's call: %s %s (%s); the hook's: %s %s (%s); want %s", r.Level, r.Answer, r.Reason, hr.Level, hr.Answer, hr.Reason, tc.want)
			}
			if tc.git == "" {
				return
			}
			// The same prompt about a file in .git, or another MCP tool (no
			// rule allows it): the firewall asks a person (nobody to ask
			// here: the prompt is left on screen).
			screen := strings.ReplaceAll(f.Screen, tc.git, ".git/hooks/"+tc.git)
			if strings.HasPrefix(tc.tool, "mcp__") {
				screen = strings.ReplaceAll(f.Screen, `"`+tc.git+`"`, `"get-env"`)
				screen = strings.ReplaceAll(screen, "everything."+tc.git, "everything.get-env")
				screen = strings.ReplaceAll(screen, "?  "+tc.git+" ", "?  get-env ")
			}
			p, r = judge(screen)
			if !p.Complete() || r.Level.RunsWithoutPerson() || r.Answer == Yes || strings.HasPrefix(tc.tool, "mcp__") && p.Tool == tc.tool {
				t.Fatalf("%s %v: %s %s (%s); incomplete: %s", p.Tool, p.Args, r.Level, r.Answer, r.Reason, p.Incomplete)
			}
		})
	}
}
