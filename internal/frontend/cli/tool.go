package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/paths"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/undo"
	"github.com/overseer-dev/overseer/plugin"
)

func init() {
	extraCommands = append(extraCommands,
		func(a *app) *cobra.Command { return a.toolCmd() },
		func(a *app) *cobra.Command { return a.undoCmd() },
	)
}

// ToolsConfigName is the optional configuration file of the tool plugins
// in Overseer's home (for example the DSN of the SQL tools).
const ToolsConfigName = "tools.json"

// defaultToolPlugin is the plugin `tool run` takes tools from.
const defaultToolPlugin = "tool.builtin"

// cliSession is the session of `tool run` calls that name none, so that a
// file_read and a later file_edit from the same shell belong together.
const cliSession = "cli"

func (a *app) toolCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tool",
		Short: "Run Overseer's builtin tools through the firewall",
	}
	cmd.AddCommand(a.toolRunCmd(), a.toolListCmd())
	return cmd
}

// toolFlags are the flags shared by the tool sub-commands.
type toolFlags struct {
	pluginID string
	config   string
}

func (f *toolFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.pluginID, "plugin", defaultToolPlugin, "the Tool plugin to take the tool from")
	cmd.Flags().StringVar(&f.config, "config", "", "the plugin's configuration, as JSON or @file (default $OVERSEER_HOME/"+ToolsConfigName+" if present)")
}

// loadTool builds the Tool plugin instance.
func (a *app) loadTool(f toolFlags) (plugin.Tool, error) {
	var raw json.RawMessage
	switch {
	case strings.HasPrefix(f.config, "@"):
		b, err := os.ReadFile(f.config[1:])
		if err != nil {
			return nil, err
		}
		raw = b
	case f.config != "":
		raw = json.RawMessage(f.config)
	default:
		home, err := a.homeDir()
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(filepath.Join(home, ToolsConfigName))
		if err == nil {
			raw = b
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	inst, err := plugin.New(f.pluginID, raw)
	if err != nil {
		return nil, err
	}
	t, ok := inst.(plugin.Tool)
	if !ok {
		return nil, fmt.Errorf("plugin %s is not a Tool plugin", f.pluginID)
	}
	return t, nil
}

func (a *app) toolListCmd() *cobra.Command {
	var f toolFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tools with their kinds and input schemas",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := a.loadTool(f)
			if err != nil {
				return err
			}
			specs, err := t.Tools(cmd.Context())
			if err != nil {
				return err
			}
			return a.printJSON(specs)
		},
	}
	f.register(cmd)
	return cmd
}

func (a *app) toolRunCmd() *cobra.Command {
	var (
		f                   toolFlags
		argsJSON, cwd, sess string
		yes, asJSON         bool
	)
	cmd := &cobra.Command{
		Use:   "run NAME --args JSON",
		Short: "Run one tool call through the whole firewall",
		Long: `Run one call of a builtin tool (bash, file_read, file_write, file_edit,
web_fetch, sql_query, sql_exec) through the whole firewall: the call is judged
and recorded like any agent's; auto and notify run; confirm and approve wait
for a person (answer with 'overseer approve ID' or 'overseer deny ID'), or,
with --yes, you answer yes for this one call; block never runs. Before a
write, edit or delete the previous content is kept, so 'overseer undo' can
restore it.

Exit status: 0 when the tool ran and succeeded, 1 when it ran and failed (or
could not be started), 2 when it did not run because it was blocked or denied.`,
		Example: `  overseer tool run file_read --args '{"file_path":"main.go"}'
  overseer tool run bash --args '{"command":"go test ./..."}' --cwd ~/src/app
  overseer tool run file_write --yes --args '{"file_path":"/tmp/out/report.md","content":"…"}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			callArgs, err := parseCallArgs(argsJSON)
			if err != nil {
				return exit(2, err)
			}
			if cwd == "" {
				if cwd, err = os.Getwd(); err != nil {
					return err
				}
			}
			if cwd, err = filepath.Abs(cwd); err != nil {
				return err
			}
			t, err := a.loadTool(f)
			if err != nil {
				return err
			}
			k, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer k.Close()
			act := &action.Action{Agent: paths.BuiltinAgent, Session: sess, Tool: args[0], Args: callArgs, Cwd: cwd}
			run, err := k.RunTool(ctx, t, act, kernel.RunOptions{Yes: yes, Who: whoami(), OnWait: func(apr *store.Approval) {
				fmt.Fprintf(a.stderr, "overseer: %s needs a person's answer (%s): %s\n", args[0], apr.Level, apr.Verdict.Summary())
				fmt.Fprintf(a.stderr, "overseer: waiting for approval %s — answer with: overseer approve %s | overseer deny %s\n", apr.ID, apr.ID, apr.ID)
			}})
			if asJSON && run != nil {
				if perr := a.printJSON(run); perr != nil {
					return perr
				}
			}
			if err != nil {
				if run != nil && !asJSON {
					a.printRefusal(run.Verdict)
				}
				code := 1
				if errors.Is(err, kernel.ErrBlocked) || errors.Is(err, kernel.ErrDenied) {
					code = 2
				}
				return exit(code, fmt.Errorf("%s did not run: %w", args[0], err))
			}
			if !asJSON {
				out := run.Result.Output
				if out != "" && !strings.HasSuffix(out, "\n") {
					out += "\n"
				}
				fmt.Fprint(a.stdout, out)
				if run.Verdict.Level == action.Notify || run.Approval != nil {
					fmt.Fprintf(a.stderr, "overseer: %s ran at level %s (action %s)\n", args[0], run.Verdict.Level, run.Action.ID)
				}
				if run.Undoable && !run.Result.IsError {
					fmt.Fprintf(a.stderr, "overseer: undo with: overseer undo %s\n", run.Action.ID)
				}
			}
			if run.Result.IsError {
				return exit(1, fmt.Errorf("%s failed", args[0]))
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&argsJSON, "args", "{}", "the tool's arguments as a JSON object, or @file")
	cmd.Flags().StringVar(&cwd, "cwd", "", "the working directory of the call (default: the current directory)")
	cmd.Flags().BoolVar(&yes, "yes", false, "answer yes yourself if the call needs a person's confirm or approve (a block stays a block)")
	cmd.Flags().StringVar(&sess, "session", cliSession, "the session the call belongs to (reads and undo history are per session)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole outcome (verdict, approval, result) as JSON")
	return cmd
}

// parseCallArgs decodes --args: a JSON object, or @file holding one.
func parseCallArgs(s string) (map[string]any, error) {
	if p, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		s = string(b)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("--args must be a JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("--args must be one JSON object")
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// printRefusal explains a verdict that stopped a call.
func (a *app) printRefusal(v action.Verdict) {
	fmt.Fprintf(a.stderr, "overseer: verdict %s\n", v.Summary())
	for _, r := range v.Reasons {
		if r.Level < action.Confirm {
			continue
		}
		fmt.Fprintf(a.stderr, "  - %s [%s %s]: %s\n", r.Level, r.Layer, r.Origin(), r.Message)
	}
	for _, h := range v.Hints {
		fmt.Fprintf(a.stderr, "  hint: %s\n", h)
	}
}

func (a *app) undoCmd() *cobra.Command {
	var (
		sess                string
		last                int
		list, asDiff, prune bool
		maxAge              time.Duration
		maxBytes            int64
	)
	cmd := &cobra.Command{
		Use:   "undo [ACTION_ID]",
		Short: "Restore the files an action wrote, edited or deleted",
		Long: `Restore what Overseer kept before an action changed files: the previous
content comes back, files the action created are removed. Every undo is
recorded in the audit log.

  overseer undo ACTION_ID                 undo one action
  overseer undo --session S --last N      undo the last N actions of a session, newest first
  overseer undo --session S --list        list the actions that can be undone
  overseer undo ACTION_ID --diff          show what undo would change, without changing it
  overseer undo --prune                   drop undo data older than --max-age, then the oldest
                                          until at most --max-bytes of content is kept`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) == 0 && !cmd.Flags().Changed("session") && !cmd.Flags().Changed("last") && !list && !prune {
				return exit(2, errors.New("name an action id, or the actions to undo with --session S --last N"))
			}
			k, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer k.Close()
			who := whoami()
			switch {
			case prune:
				u, err := k.Undo()
				if err != nil {
					return err
				}
				st, err := u.Prune(ctx, maxAge, maxBytes)
				fmt.Fprintf(a.stdout, "pruned the undo data of %d actions: %d blobs, %d bytes freed; %d bytes kept\n",
					st.Actions, st.Blobs, st.BytesFreed, st.BytesKept)
				if err != nil {
					return exit(1, err)
				}
				return nil
			case len(args) == 1 && asDiff:
				u, err := k.Undo()
				if err != nil {
					return err
				}
				d, err := u.Diff(ctx, args[0])
				if err != nil {
					return exit(1, err)
				}
				if d == "" {
					fmt.Fprintln(a.stdout, "Undo would change nothing: the files are as they were kept.")
					return nil
				}
				fmt.Fprint(a.stdout, d)
				return nil
			case len(args) == 1:
				entries, err := k.UndoAction(ctx, args[0], who)
				if !undo.NothingDone(err) {
					a.printUndone(args[0], entries)
				}
				if err != nil {
					return exit(1, fmt.Errorf("undo %s: %w", args[0], err))
				}
				return nil
			case list:
				u, err := k.Undo()
				if err != nil {
					return err
				}
				entries, err := u.Last(ctx, sess, last)
				if err != nil {
					return err
				}
				if len(entries) == 0 {
					fmt.Fprintf(a.stdout, "Nothing to undo in session %q.\n", sess)
				}
				for _, e := range entries {
					fmt.Fprintf(a.stdout, "%s\t%s\t%s\n", e.ActionID, e.At.Format("2006-01-02 15:04:05"), e.Path)
				}
				return nil
			default:
				if last < 1 {
					return exit(2, errors.New("--last must be at least 1"))
				}
				done, err := k.UndoLast(ctx, sess, last, who)
				for _, id := range done {
					fmt.Fprintf(a.stdout, "undone %s\n", id)
				}
				if err != nil {
					return exit(1, err)
				}
				if len(done) == 0 {
					fmt.Fprintf(a.stdout, "Nothing to undo in session %q.\n", sess)
				}
				return nil
			}
		},
	}
	cmd.Flags().StringVar(&sess, "session", cliSession, "the session whose last actions to undo or list")
	cmd.Flags().IntVar(&last, "last", 1, "how many of the session's last actions to undo (with --list: to list; 0 lists all)")
	cmd.Flags().BoolVar(&list, "list", false, "list the session's actions that can be undone")
	cmd.Flags().BoolVar(&asDiff, "diff", false, "show what undoing ACTION_ID would change, without changing anything")
	cmd.Flags().BoolVar(&prune, "prune", false, "drop old undo data (see --max-age and --max-bytes)")
	cmd.Flags().DurationVar(&maxAge, "max-age", 30*24*time.Hour, "with --prune: drop undo data older than this (0: no age limit)")
	cmd.Flags().Int64Var(&maxBytes, "max-bytes", 1<<30, "with --prune: keep at most this much content (0: no size limit)")
	return cmd
}

func (a *app) printUndone(id string, entries []undo.Entry) {
	for _, e := range entries {
		verb := "restored"
		if len(e.Files) == 1 && !e.Files[0].Existed {
			verb = "removed"
		}
		fmt.Fprintf(a.stdout, "%s %s (undo of %s)\n", verb, e.Path, id)
	}
}
