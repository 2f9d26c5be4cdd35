package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// The controls of unattended hours: `overseer auto-rules …` and
// `overseer anomaly …`. They work on the database directly (a running
// daemon sees every change within a second: the changes are audit records
// it follows). `overseer rules` stays the learned-rule proposals.

func init() {
	extraCommands = append(extraCommands,
		func(a *app) *cobra.Command { return a.autoRulesCmd() },
		func(a *app) *cobra.Command { return a.anomalyCmd() },
	)
}

// ruleArg reads a rule given as JSON or @file.
func ruleArg(s string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("give the rule with --json '{…}' or --json @file")
	}
	if strings.HasPrefix(s, "@") {
		return os.ReadFile(s[1:])
	}
	return []byte(s), nil
}

// withKernel opens the home's kernel for one command that reads what is
// there; changeKernel for one that may be the home's first (adding rules
// before the first run).
func (a *app) withKernel(ctx context.Context, fn func(k *kernel.Kernel) error) error {
	k, err := a.openExisting(ctx)
	if err != nil {
		return err
	}
	defer k.Close()
	return fn(k)
}

func (a *app) changeKernel(ctx context.Context, fn func(k *kernel.Kernel) error) error {
	if home, err := a.homeDir(); err == nil {
		a.warnOtherHome(home)
	}
	k, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer k.Close()
	return fn(k)
}

func (a *app) autoRulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "auto-rules",
		Aliases: []string{"auto-rule"},
		Short:   "Auto-rules on the audit trail: a trigger (count, error rate, time, cost, pattern) and an action",
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the auto-rules by priority, with how often each fired",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withKernel(cmd.Context(), func(k *kernel.Kernel) error {
				rs, err := k.AutoRules(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(rs)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 2, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tPRIO\tON\tNAME\tTRIGGER\tACTION\tFIRED\tLAST")
				for _, r := range rs {
					last := "-"
					if !r.LastTriggered.IsZero() {
						last = r.LastTriggered.UTC().Format("2006-01-02 15:04:05")
					}
					fmt.Fprintf(tw, "%s\t%d\t%v\t%s\t%s %s\t%s\t%d\t%s\n", r.ID, r.Priority, r.Enabled, r.Name,
						r.Trigger.Type, r.Trigger.Tool, r.Action.Type, r.TimesTriggered, last)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	var ruleID string
	var limit int
	logCmd := &cobra.Command{
		Use:   "log",
		Short: "The rule log: which auto-rule fired when, on which call",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withKernel(cmd.Context(), func(k *kernel.Kernel) error {
				recs, err := k.RuleLog(cmd.Context(), ruleID, limit)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 2, 2, ' ', 0)
				fmt.Fprintln(tw, "TIME\tRULE\tACTION\tAGENT\tTOOL\tVERDICT\tCALL")
				for _, r := range recs {
					var f kernel.RuleFired
					if json.Unmarshal(r.Data, &f) != nil {
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.UTC().Format("2006-01-02 15:04:05"), f.RuleName,
						f.Action, r.Agent, r.Tool, f.Verdict, r.ActionID)
				}
				return tw.Flush()
			})
		},
	}
	logCmd.Flags().StringVar(&ruleID, "rule", "", "only this rule's firings")
	logCmd.Flags().IntVar(&limit, "limit", 50, "at most this many, newest first")

	templates := &cobra.Command{
		Use:   "templates",
		Short: "List the ready-made rule sets (night-mode, weekend-safety)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.printJSON(autorule.Templates())
		},
	}
	var twho string
	template := &cobra.Command{
		Use:   "template NAME",
		Short: "Add every rule of a ready-made rule set",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if twho == "" {
				twho = whoami()
			}
			return a.changeKernel(cmd.Context(), func(k *kernel.Kernel) error {
				rs, err := k.AddTemplate(cmd.Context(), args[0], twho)
				if err != nil {
					return err
				}
				return a.printJSON(rs)
			})
		},
	}
	template.Flags().StringVar(&twho, "who", "", "who adds them (default: your user name)")
	kind := autoRuleKind
	cmd.AddCommand(list, kind.putCmd(a, "add", "Add an auto-rule (JSON: name, trigger, action, priority, enabled)", false),
		kind.putCmd(a, "edit ID", "Replace an auto-rule", true), kind.rmCmd(a, "Remove an auto-rule"), logCmd,
		kind.testCmd(a, "Dry run: replay a rule over the audit trail of the last days and show what it would have done, call by call"),
		templates, template)
	return cmd
}

func (a *app) printDryRun(rep *kernel.ControlDryRun) error {
	fmt.Fprintf(a.stdout, "Replayed %d calls of the last %d days: the rule fires on %d, changes %d (blocks %d, asks a person %d, loosens %d); %d refused as the agent was paused.\n",
		rep.Examined, rep.Days, rep.Fired, rep.Changed, rep.Blocked, rep.Asked, rep.Loosened, rep.Paused)
	if len(rep.Cases) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tAGENT\tTHEN\tNOW\tWITH\tWHAT\tCALL")
	for _, c := range rep.Cases {
		what := "paused"
		if len(c.Fired) > 0 {
			what = c.Fired[0].Action
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Time.UTC().Format("2006-01-02 15:04:05"), c.Agent, c.Then, c.Without, c.With, what, c.Summary)
	}
	return tw.Flush()
}

func (a *app) anomalyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "anomaly",
		Short: "Anomaly rules (a burst of calls stops the agent and rolls back its last changes), detected anomalies, rollbacks",
	}
	rules := &cobra.Command{
		Use:   "rules",
		Short: "List the anomaly rules",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withKernel(cmd.Context(), func(k *kernel.Kernel) error {
				rs, err := k.AnomalyRules(cmd.Context())
				if err != nil {
					return err
				}
				return a.printJSON(rs)
			})
		},
	}
	events := &cobra.Command{
		Use:   "events",
		Short: "The detected anomalies, newest first, with their rollbacks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withKernel(cmd.Context(), func(k *kernel.Kernel) error {
				evs, err := k.AnomalyEvents(cmd.Context())
				if err != nil {
					return err
				}
				return a.printJSON(evs)
			})
		},
	}
	var depth int
	var rwho string
	rollback := &cobra.Command{
		Use:   "rollback EVENT",
		Short: "Roll back the agent's last reversible actions up to an anomaly (shell commands are never reversed)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if rwho == "" {
				rwho = whoami()
			}
			return a.withKernel(cmd.Context(), func(k *kernel.Kernel) error {
				rb, err := k.RollbackAnomaly(cmd.Context(), args[0], depth, rwho)
				if rb != nil {
					if perr := a.printJSON(rb); perr != nil {
						return perr
					}
				}
				return err
			})
		},
	}
	rollback.Flags().IntVar(&depth, "depth", 0, "how many reversible actions (default: the rule's, else 10)")
	rollback.Flags().StringVar(&rwho, "who", "", "who rolls back (default: your user name)")
	kind := anomalyRuleKind
	cmd.AddCommand(rules, kind.putCmd(a, "add", "Add an anomaly rule (JSON: name, tool_name, threshold_count, window_seconds, baseline_multiplier, action, rollback, notify_channels)", false),
		kind.putCmd(a, "edit ID", "Replace an anomaly rule", true), kind.rmCmd(a, "Remove an anomaly rule"), events, rollback,
		kind.testCmd(a, "Dry run: replay an anomaly rule over the audit trail and show where it would have stopped an agent"))
	return cmd
}

// ruleKind is what the commands that add, edit, remove and dry-run a kind
// of rule (auto-rules, anomaly rules) need to know of it.
type ruleKind[R any] struct {
	noun   string // in what a removal prints
	decode func([]byte) (R, error)
	setID  func(r *R, id string)
	put    func(k *kernel.Kernel, ctx context.Context, r R, who string) (*R, error)
	remove func(k *kernel.Kernel, ctx context.Context, id, who string) error
	dryRun func(k *kernel.Kernel, ctx context.Context, r R, days int) (*kernel.ControlDryRun, error)
}

var (
	autoRuleKind = ruleKind[autorule.Rule]{noun: "auto-rule", decode: autorule.DecodeRule,
		setID: func(r *autorule.Rule, id string) { r.ID = id },
		put:   (*kernel.Kernel).PutAutoRule, remove: (*kernel.Kernel).DeleteAutoRule, dryRun: (*kernel.Kernel).DryRunAutoRule}
	anomalyRuleKind = ruleKind[autorule.AnomalyRule]{noun: "anomaly rule", decode: autorule.DecodeAnomalyRule,
		setID: func(r *autorule.AnomalyRule, id string) { r.ID = id },
		put:   (*kernel.Kernel).PutAnomalyRule, remove: (*kernel.Kernel).DeleteAnomalyRule, dryRun: (*kernel.Kernel).DryRunAnomalyRule}
)

// putCmd adds a rule (edit false: any ID in the JSON is dropped) or
// replaces the one named by the argument (edit true).
func (rk ruleKind[R]) putCmd(a *app, use, short string, edit bool) *cobra.Command {
	var raw, who string
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := ruleArg(raw)
			if err != nil {
				return err
			}
			r, err := rk.decode(b)
			if err != nil {
				return err
			}
			rk.setID(&r, "")
			if edit {
				if len(args) != 1 {
					return fmt.Errorf("name the rule to edit")
				}
				rk.setID(&r, args[0])
			}
			if who == "" {
				who = whoami()
			}
			return a.changeKernel(cmd.Context(), func(k *kernel.Kernel) error {
				got, err := rk.put(k, cmd.Context(), r, who)
				if err != nil {
					return err
				}
				return a.printJSON(got)
			})
		},
	}
	c.Flags().StringVar(&raw, "json", "", "the rule as JSON, or @file")
	c.Flags().StringVar(&who, "who", "", "who makes the change (default: your user name)")
	return c
}

// rmCmd removes a rule.
func (rk ruleKind[R]) rmCmd(a *app, short string) *cobra.Command {
	var who string
	rm := &cobra.Command{
		Use:   "rm ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if who == "" {
				who = whoami()
			}
			return a.withKernel(cmd.Context(), func(k *kernel.Kernel) error {
				if err := rk.remove(k, cmd.Context(), args[0], who); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "Removed %s %s.\n", rk.noun, args[0])
				return nil
			})
		},
	}
	rm.Flags().StringVar(&who, "who", "", "who removes it (default: your user name)")
	return rm
}

// testCmd replays a rule over the audit trail without changing anything.
func (rk ruleKind[R]) testCmd(a *app, short string) *cobra.Command {
	var raw string
	var days int
	var asJSON bool
	test := &cobra.Command{
		Use:   "test",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := ruleArg(raw)
			if err != nil {
				return err
			}
			r, err := rk.decode(b)
			if err != nil {
				return err
			}
			return a.withKernel(cmd.Context(), func(k *kernel.Kernel) error {
				rep, err := rk.dryRun(k, cmd.Context(), r, days)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(rep)
				}
				return a.printDryRun(rep)
			})
		},
	}
	test.Flags().StringVar(&raw, "json", "", "the rule as JSON, or @file")
	test.Flags().IntVar(&days, "days", kernel.DefaultDryRunDays, "how many days of the audit trail to replay")
	test.Flags().BoolVar(&asJSON, "out-json", false, "print the report as JSON")
	return test
}
