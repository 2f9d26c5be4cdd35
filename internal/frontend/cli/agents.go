package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/kernel"
)

func init() {
	extraCommands = append(extraCommands, func(a *app) *cobra.Command { return a.agentCmd() })
}

func (a *app) agentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Agents' records and earned trust: show, promote, demote",
		Long: `Trust is earned, not preset. An agent starts audited (its transcripts are
judged after the fact: 'overseer audit ingest'); a person may promote it to
delegated (a grant proposed from what it actually did), then to supervised
with auto-approval on specific tools. A violation found by ingest demotes it
one step and notifies; every change is in the audit log.`,
	}
	cmd.AddCommand(a.agentListCmd(), a.agentShowCmd(), a.agentPromoteCmd(), a.agentDemoteCmd())
	return cmd
}

func (a *app) agentListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the agents Overseer has seen, with their trust mode",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := a.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer k.Close()
			names, err := k.Agents(cmd.Context())
			if err != nil {
				return err
			}
			var out []*kernel.AgentTrust
			for _, n := range names {
				t, err := k.AgentTrustOf(cmd.Context(), n)
				if err != nil {
					return err
				}
				out = append(out, t)
			}
			if asJSON {
				return a.printJSON(out)
			}
			for _, t := range out {
				fmt.Fprintf(a.stdout, "%-24s %s\n", termSafe(t.Agent), describeTrust(t))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func describeTrust(t *kernel.AgentTrust) string {
	s := string(t.Mode)
	if len(t.AutoTools) > 0 {
		s += " (auto: " + termSafe(strings.Join(t.AutoTools, ", ")) + ")"
	}
	if t.By != "" {
		s += fmt.Sprintf(" since %s by %s", t.Since.Format("2006-01-02 15:04"), t.By)
	}
	return s
}

func (a *app) agentShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show AGENT",
		Short: "Show an agent's record: actions, verdicts, refusals, violations, trust history and the grant a promotion would propose",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := a.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer k.Close()
			r, err := k.AgentRecord(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(r)
			}
			w := a.stdout
			fmt.Fprintf(w, "agent:      %s\nmode:       %s\n", termSafe(r.Agent), describeTrust(r.Trust))
			fmt.Fprintf(w, "actions:    %d live, %d ingested\n", r.Actions, r.Ingested)
			var lv []string
			for _, l := range []string{"auto", "notify", "confirm", "approve", "block"} {
				if n := r.Verdicts[l]; n > 0 {
					lv = append(lv, fmt.Sprintf("%s %d", l, n))
				}
			}
			fmt.Fprintf(w, "verdicts:   %s\nrefusals:   %d\n", strings.Join(lv, ", "), r.Refusals)
			tools := make([]string, 0, len(r.Tools))
			for t, n := range r.Tools {
				tools = append(tools, fmt.Sprintf("%s %d", termSafe(t), n))
			}
			sort.Strings(tools)
			fmt.Fprintf(w, "tools:      %s\n", strings.Join(tools, ", "))
			fmt.Fprintf(w, "violations: %d\n", len(r.Violations))
			for _, v := range r.Violations {
				fmt.Fprintf(w, "  %s %s %s: %s (%s)\n", v.At.Format("2006-01-02 15:04:05"), v.ActionID, termSafe(v.Tool), termSafe(v.Summary), termSafe(v.Source))
			}
			for _, c := range r.History {
				fmt.Fprintf(w, "trust:      %s %s → %s by %s: %s\n", c.Op, c.From, c.To, termSafe(c.Who), termSafe(c.Reason))
			}
			if p := r.Proposal; p != nil && r.Trust.Mode == kernel.ModeAudited {
				fmt.Fprintf(w, "proposed grant (promote --to delegated): tools %s; at most %d steps and %s per session; from %d calls (%d read from transcripts)\n",
					termSafe(strings.Join(p.Tools, ", ")), p.MaxSteps, p.MaxDuration, p.Basis, p.BasisIngested)
				if len(p.Excluded) > 0 {
					fmt.Fprintf(w, "  left out (a violation or refusal): %s\n", termSafe(strings.Join(p.Excluded, ", ")))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) agentPromoteCmd() *cobra.Command {
	var (
		to, reason string
		tools      []string
		accept     bool
	)
	cmd := &cobra.Command{
		Use:   "promote AGENT --to delegated|supervised [--tools T,...]",
		Short: "Promote an agent one step: audited → delegated (proposed grant), delegated → supervised (auto-approval on --tools)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := kernel.ParseTrustMode(to)
			if err != nil {
				return exit(2, err)
			}
			k, err := a.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer k.Close()
			c, err := k.PromoteAgent(cmd.Context(), kernel.Promotion{Agent: args[0], To: mode, Tools: tools,
				Who: whoami(), Reason: reason, AcceptViolations: accept})
			if err != nil {
				return exit(1, err)
			}
			fmt.Fprintf(a.stdout, "%s promoted from %s to %s\n", c.Agent, c.From, c.To)
			if g := c.Trust.Grant; g != nil && c.To == kernel.ModeDelegated {
				fmt.Fprintf(a.stdout, "proposed grant: tools %s; at most %d steps and %s per session\n", strings.Join(g.Tools, ", "), g.MaxSteps, g.MaxDuration)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the mode to promote to (the next step): delegated or supervised")
	cmd.Flags().StringSliceVar(&tools, "tools", nil, "tools to auto-approve (promotion to supervised)")
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded)")
	cmd.Flags().BoolVar(&accept, "accept-violations", false, "promote although violations were found since your last decision")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func (a *app) agentDemoteCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "demote AGENT",
		Short: "Demote an agent one step (supervised → delegated → audited)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := a.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer k.Close()
			c, err := k.DemoteAgent(cmd.Context(), args[0], whoami(), reason)
			if err != nil {
				return exit(1, err)
			}
			fmt.Fprintf(a.stdout, "%s demoted from %s to %s\n", c.Agent, c.From, c.To)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded)")
	return cmd
}
