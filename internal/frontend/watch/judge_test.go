package watch

import (
	"context"
	"os"
	"path/filepath"
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
