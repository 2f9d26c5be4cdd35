package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/action"
)

// evalOutput is what `overseer eval` prints: the verdict, plus the kind and
// facts the action was judged on.
type evalOutput struct {
	action.Verdict
	Tool  string       `json:"tool"`
	Kind  action.Kind  `json:"kind"`
	Facts action.Facts `json:"facts"`
}

// readAction decodes one action from r. Only tool and args are required.
func readAction(r io.Reader) (*action.Action, error) {
	b, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil, fmt.Errorf(`no action on standard input; pass one JSON object such as {"tool":"Bash","args":{"command":"ls"}}`)
	}
	var a action.Action
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("the action is not valid JSON: %w", err)
	}
	if a.Tool == "" {
		return nil, fmt.Errorf(`the action has no "tool"`)
	}
	if a.Args == nil {
		a.Args = map[string]any{}
	}
	a.Facts = action.Facts{} // derived by the analyzers, never taken from input
	return &a, nil
}

// defaultCwd gives an action read on the command line this process's
// working directory when it names none.
func defaultCwd(a *action.Action) {
	if a.Cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			a.Cwd = wd
		}
	}
}

// failedVerdict is printed when evaluation could not run: never auto.
func failedVerdict(a *action.Action, err error) action.Verdict {
	r := action.Reason{Layer: "engine", Source: action.SourceError, Level: action.Approve,
		Message: "evaluation failed, so a person must decide: " + err.Error()}
	return action.Verdict{Level: action.Approve, Reasons: []action.Reason{r}, Decider: &r, ArgsHash: a.ArgsHash()}
}

func (a *app) evalCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "eval",
		Short: "Judge one action read as JSON on standard input, without running it",
		Long: `Read one action as JSON on standard input and print the verdict as JSON:
  {"tool": "Bash", "kind": "shell", "args": {"command": "rm -rf build"}, "agent": "me", "cwd": "/src"}
Only "tool" and "args" are required; "kind" is inferred from well-known tool
names, and "cwd" defaults to this command's own working directory (relative
paths and commands are judged where you run it). Nothing is executed and
nothing is recorded. The exit status is 0 whenever a verdict was printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			act, err := readAction(a.stdin)
			if err != nil {
				return exit(2, err)
			}
			defaultCwd(act)
			v, err := a.evaluate(cmd.Context(), act)
			if err != nil {
				fmt.Fprintln(a.stderr, "overseer: evaluation failed:", err)
				v = failedVerdict(act, err)
			}
			return a.printJSON(evalOutput{Verdict: v, Tool: act.Tool, Kind: act.Kind, Facts: act.Facts})
		},
	}
}

// evaluate judges an action in this process, with the user layer from the
// database.
func (a *app) evaluate(ctx context.Context, act *action.Action) (action.Verdict, error) {
	if home, err := a.homeDir(); err == nil {
		a.warnOtherHome(home)
	}
	k, err := a.open(ctx)
	if err != nil {
		return action.Verdict{}, err
	}
	defer k.Close()
	return k.Evaluate(ctx, act), nil
}
