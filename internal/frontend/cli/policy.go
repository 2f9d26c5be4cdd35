package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/kernel"
)

func (a *app) policyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Test, explain and review the policy",
	}
	cmd.AddCommand(a.policyTestCmd(), a.policyExplainCmd(), a.policyHistoryCmd())
	return cmd
}

func (a *app) policyTestCmd() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Check the policy file and run its rules' match/not_match examples",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := a.homeDir()
			if err != nil {
				return err
			}
			p, file, err := kernel.LoadPolicy(home, a.policy)
			if err != nil {
				return exit(1, err)
			}
			if file == "" {
				file = "built-in default policy"
			}
			results := p.Test()
			failed := 0
			for _, r := range results {
				if !r.Pass {
					failed++
				}
				if verbose || !r.Pass {
					mark := "ok  "
					if !r.Pass {
						mark = "FAIL"
					}
					args, _ := json.Marshal(r.Example.Args)
					line := ""
					if r.Line > 0 {
						line = fmt.Sprintf(" (line %d)", r.Line)
					}
					fmt.Fprintf(a.stdout, "%s %s/%s %s #%d%s: %s %s — want %s, got %s\n", mark, r.Layer, r.Rule, r.Check, r.Index+1, line,
						r.Example.Tool, args, r.Want, r.Got)
				}
			}
			fmt.Fprintf(a.stdout, "%s: %d rules, %d examples, %d passed, %d failed\n", file, len(p.Rules), len(results), len(results)-failed, failed)
			if failed > 0 {
				return exit(1, fmt.Errorf("%d policy examples failed", failed))
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every example, not only failures")
	return cmd
}

func (a *app) policyExplainCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Show which rule decides an action (read as JSON on standard input) and why",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			act, err := readAction(a.stdin)
			if err != nil {
				return exit(2, err)
			}
			defaultCwd(act)
			if home, err := a.homeDir(); err == nil {
				a.warnOtherHome(home)
			}
			k, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer k.Close()
			ex := k.Explain(cmd.Context(), act)
			if asJSON {
				return a.printJSON(ex)
			}
			v := ex.Verdict
			fmt.Fprintf(a.stdout, "Action:   %s (kind %s)\n", ex.Action.Tool, ex.Action.Kind)
			args, _ := json.Marshal(ex.Action.Args)
			fmt.Fprintf(a.stdout, "Args:     %s\n", args)
			fmt.Fprintf(a.stdout, "Verdict:  %s\n", strings.ToUpper(v.Level.String()))
			if v.Decider != nil {
				fmt.Fprintf(a.stdout, "Decided by: %s %s (%s): %s\n", v.Decider.Source, v.Decider.Name, v.Decider.Layer, v.Decider.Message)
			}
			fmt.Fprintln(a.stdout, "\nReasons:")
			for _, r := range v.Reasons {
				layer := r.Layer
				if r.PolicyLayer != "" {
					layer += "/" + r.PolicyLayer
				}
				fmt.Fprintf(a.stdout, "  %-8s %-8s %-9s %s — %s\n", layer, r.Level, r.Source, r.Name, r.Message)
			}
			for _, sec := range []struct {
				name  string
				steps []kernel.PolicyStep
			}{{"Admin layer", ex.Admin}, {"User layer", ex.User}} {
				fmt.Fprintf(a.stdout, "\n%s (read top to bottom, first match wins):\n", sec.name)
				if len(sec.steps) == 0 {
					fmt.Fprintln(a.stdout, "  (no rules)")
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				for _, st := range sec.steps {
					m := "no"
					if st.Matched {
						m = "MATCH"
					}
					fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", m, st.Rule, st.Level, st.Why)
				}
				tw.Flush()
			}
			fmt.Fprintf(a.stdout, "\nDefault for %s: %s\n", ex.Action.Kind, ex.Default)
			if v.Preview != nil {
				fmt.Fprintf(a.stdout, "\nPreview: %s\n", v.Preview.Summary)
				for _, it := range v.Preview.Items {
					fmt.Fprintf(a.stdout, "  %s\n", it)
				}
				if v.Preview.More > 0 {
					fmt.Fprintf(a.stdout, "  … and %d more\n", v.Preview.More)
				}
			}
			for _, h := range v.Hints {
				fmt.Fprintf(a.stdout, "\nHint for the agent: %s\n", h)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the explanation as JSON")
	return cmd
}

func (a *app) policyHistoryCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List the changes to the user policy layer (adaptive and human)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := a.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer k.Close()
			recs, err := k.PolicyHistory(cmd.Context(), 0)
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]map[string]any, 0, len(recs))
				for _, r := range recs {
					var pc kernel.PolicyChange
					_ = json.Unmarshal(r.Data, &pc)
					out = append(out, map[string]any{"seq": r.Seq, "time": r.Time, "change": pc})
				}
				return a.printJSON(out)
			}
			if len(recs) == 0 {
				fmt.Fprintln(a.stdout, "The user policy layer has not changed.")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SEQ\tTIME\tORIGIN\tOP\tRULE\tTOOL\tBEFORE\tAFTER\tREASON")
			for _, r := range recs {
				var pc kernel.PolicyChange
				_ = json.Unmarshal(r.Data, &pc)
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Local().Format("2006-01-02 15:04:05"),
					pc.Origin, pc.Op, pc.RuleID, pc.Tool, pc.Before, pc.After, pc.Reason)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
