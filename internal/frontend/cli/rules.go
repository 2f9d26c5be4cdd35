package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

func init() {
	extraCommands = append(extraCommands, func(a *app) *cobra.Command { return a.rulesCmd() })
}

// trustBackend is where the rules commands read and write: the daemon when
// one runs for this home, else the database directly.
type trustBackend struct {
	c *client.Client
	k *kernel.Kernel
}

func (a *app) trust(ctx context.Context) (*trustBackend, func(), error) {
	home, err := a.homeDir()
	if err != nil {
		return nil, nil, err
	}
	if c, err := client.Discover(ctx, home); err == nil {
		return &trustBackend{c: c}, func() {}, nil
	}
	k, err := a.openExisting(ctx)
	if err != nil {
		return nil, nil, err
	}
	return &trustBackend{k: k}, func() { k.Close() }, nil
}

func (b *trustBackend) proposals(ctx context.Context) ([]kernel.Proposal, error) {
	if b.c != nil {
		return b.c.Proposals(ctx)
	}
	return b.k.Proposals(ctx)
}

func (b *trustBackend) proposal(ctx context.Context, id string) (*kernel.Proposal, error) {
	if b.c != nil {
		return b.c.Proposal(ctx, id)
	}
	return b.k.Proposal(ctx, id)
}

func (b *trustBackend) accept(ctx context.Context, id string, req client.ProposalAnswer) (*store.UserRule, *kernel.Proposal, error) {
	if b.c != nil {
		r, err := b.c.AcceptProposal(ctx, id, req)
		if err != nil {
			return nil, nil, err
		}
		return r.Rule, r.Proposal, nil
	}
	return b.k.AcceptProposal(ctx, id, req.Version, req.Rule, req.Who)
}

func (b *trustBackend) dismiss(ctx context.Context, id, who string) error {
	if b.c != nil {
		return b.c.DismissProposal(ctx, id, client.ProposalAnswer{Who: who})
	}
	_, err := b.k.DismissProposal(ctx, id, who)
	return err
}

func (b *trustBackend) replay(ctx context.Context, r policy.Rule) (*firewall.ReplayReport, error) {
	if b.c != nil {
		return b.c.ReplayRule(ctx, r)
	}
	return b.k.ReplayRule(ctx, r)
}

func (b *trustBackend) userRules(ctx context.Context) ([]store.UserRule, error) {
	if b.c != nil {
		return b.c.UserRules(ctx)
	}
	return b.k.Store.ListUserRules(ctx, b.k.Clock.Now())
}

func (b *trustBackend) remove(ctx context.Context, id, who string) error {
	if b.c != nil {
		return b.c.RemoveUserRule(ctx, id, who)
	}
	return b.k.RemoveUserRule(ctx, id, who)
}

func (a *app) rulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Review learned trust: proposed rules, their dry runs, and your rules",
		Long: `When you have approved the same kind of call several times (settings.adaptation.propose_after,
default 3) and refused none like it, Overseer proposes the narrowest rule that covers those
approvals, with a dry run over the audit trail. Nothing changes until you accept it.

  overseer rules proposals          list the proposals and their dry runs
  overseer rules show ID            one proposal: its rule, and every call the dry run names
  overseer rules accept ID          save it in your (user) policy layer; --rule to accept your edit
  overseer rules dismiss ID         do not propose it again
  overseer rules list               your rules; overseer rules remove ID reverts one
  overseer rules test --rule @r.json  the dry run of any rule over the audit trail`,
	}
	cmd.AddCommand(a.rulesProposalsCmd(), a.rulesShowCmd(), a.rulesAcceptCmd(), a.rulesDismissCmd(),
		a.rulesListCmd(), a.rulesRemoveCmd(), a.rulesTestCmd())
	return cmd
}

func (a *app) rulesProposalsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "proposals",
		Aliases: []string{"proposed"},
		Short:   "List the rules Overseer proposes from your approvals, with their dry runs",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, done, err := a.trust(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			list, err := b.proposals(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "No rule is proposed.")
				return nil
			}
			for i := range list {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				printProposal(a.stdout, &list[i], false)
			}
			fmt.Fprintln(a.stdout, "\nAccept with: overseer rules accept ID · dismiss with: overseer rules dismiss ID · details: overseer rules show ID")
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (each proposal with its rule and dry run)")
	return cmd
}

func (a *app) rulesShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one proposal: its rule, examples and every call its dry run names",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, done, err := a.trust(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			p, err := b.proposal(cmd.Context(), args[0])
			if err != nil {
				return notFound(err, args[0])
			}
			if asJSON {
				return a.printJSON(p)
			}
			printProposal(a.stdout, p, true)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func notFound(err error, id string) error {
	var api *client.APIError
	if errors.Is(err, store.ErrNotFound) || errors.As(err, &api) && api.Status == 404 {
		return exit(1, fmt.Errorf("no open proposal %s (list them with `overseer rules proposals`)", id))
	}
	return err
}

func (a *app) rulesAcceptCmd() *cobra.Command {
	var rule, version, who string
	cmd := &cobra.Command{
		Use:   "accept ID",
		Short: "Accept a proposed rule: save it (or your edit, --rule) in your policy layer",
		Long: `Accept a proposed rule: it is saved in the user policy layer, recorded in the audit log, and
can be removed again with 'overseer rules remove RULE'. With --rule '{…}' or --rule @file.json
you accept your own edit of it instead: it must still pass its match and not_match examples and
let through no call you refused, and it is dry-run again.

Only a person accepts: under an AI agent the command refuses.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.refuseUnderAgent(cmd, ""); err != nil {
				return err
			}
			req := client.ProposalAnswer{Who: who, Version: version}
			if req.Who == "" {
				req.Who = whoami()
			}
			if rule != "" {
				raw, err := readRuleArg(rule)
				if err != nil {
					return exit(2, err)
				}
				r, err := policy.DecodeRuleJSON(raw)
				if err != nil {
					return exit(2, fmt.Errorf("--rule: %w", err))
				}
				req.Rule = &r
			}
			b, done, err := a.trust(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			ur, p, err := b.accept(cmd.Context(), args[0], req)
			if err != nil {
				return notFound(err, args[0])
			}
			fmt.Fprintf(a.stdout, "Accepted %s: rule %s saved in your policy layer.\n", args[0], ur.ID)
			if p != nil {
				fmt.Fprintf(a.stdout, "  %s\n  dry run: %s\n", p.Title, dryRunLine(p.DryRun))
			}
			fmt.Fprintf(a.stdout, "Revert with: overseer rules remove %s\n", ur.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&rule, "rule", "", "your edit of the proposed rule, as JSON or @file")
	cmd.Flags().StringVar(&version, "version", "", "accept only this version of the proposal (as shown by --json)")
	cmd.Flags().StringVar(&who, "who", "", "who accepts (default: your user name)")
	return cmd
}

func (a *app) rulesDismissCmd() *cobra.Command {
	var who string
	cmd := &cobra.Command{
		Use:   "dismiss ID",
		Short: "Dismiss a proposed rule: it is not proposed again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.refuseUnderAgent(cmd, ""); err != nil {
				return err
			}
			if who == "" {
				who = whoami()
			}
			b, done, err := a.trust(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			if err := b.dismiss(cmd.Context(), args[0], who); err != nil {
				return notFound(err, args[0])
			}
			fmt.Fprintf(a.stdout, "Dismissed %s; it will not be proposed again.\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&who, "who", "", "who dismisses (default: your user name)")
	return cmd
}

func (a *app) rulesListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the rules of your (user) policy layer",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, done, err := a.trust(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			rules, err := b.userRules(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if rules == nil {
					rules = []store.UserRule{}
				}
				return a.printJSON(rules)
			}
			if len(rules) == 0 {
				fmt.Fprintln(a.stdout, "Your policy layer has no rules.")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tORIGIN\tBY\tCREATED\tLEVEL\tMESSAGE")
			for _, ur := range rules {
				var r policy.Rule
				_ = json.Unmarshal(ur.Rule, &r)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ur.ID, ur.Origin, ur.CreatedBy,
					ur.CreatedAt.Local().Format("2006-01-02 15:04"), r.Level, oneLine(r.Message, 70))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) rulesRemoveCmd() *cobra.Command {
	var who string
	cmd := &cobra.Command{
		Use:     "remove RULE",
		Aliases: []string{"revert", "rm"},
		Short:   "Remove a rule of your policy layer (an accepted proposal, a remembered answer)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if who == "" {
				who = whoami()
			}
			b, done, err := a.trust(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			if err := b.remove(cmd.Context(), args[0], who); err != nil {
				var api *client.APIError
				if errors.Is(err, store.ErrNotFound) || errors.As(err, &api) && api.Status == 404 {
					return exit(1, fmt.Errorf("no rule %s in your policy layer (list them with `overseer rules list`)", args[0]))
				}
				return err
			}
			fmt.Fprintf(a.stdout, "Removed %s.\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&who, "who", "", "who removes it (default: your user name)")
	return cmd
}

func (a *app) rulesTestCmd() *cobra.Command {
	var rule string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test --rule JSON|@file",
		Short: "Dry-run a rule over the audit trail: prompts it would have saved, refusals and risky calls it would let through",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rule == "" {
				return exit(2, errors.New("give the rule with --rule '{…}' or --rule @file.json"))
			}
			raw, err := readRuleArg(rule)
			if err != nil {
				return exit(2, err)
			}
			r, err := policy.DecodeRuleJSON(raw)
			if err != nil {
				return exit(2, fmt.Errorf("--rule: %w", err))
			}
			b, done, err := a.trust(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			rep, err := b.replay(cmd.Context(), r)
			if err != nil {
				return exit(2, err)
			}
			if asJSON {
				return a.printJSON(rep)
			}
			printReplay(a.stdout, rep, true)
			return nil
		},
	}
	cmd.Flags().StringVar(&rule, "rule", "", "the rule, as JSON or @file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// dryRunLine sums a dry run up on one line.
func dryRunLine(rep *firewall.ReplayReport) string {
	if rep == nil {
		return "not run"
	}
	lt := "lets through no refused or risky call"
	if n := len(rep.LetThrough); n > 0 {
		lt = fmt.Sprintf("LETS THROUGH %d refused or risky call(s)", n)
	}
	return fmt.Sprintf("would have saved %d prompt(s) of %d past actions; matches %d; %s", rep.PromptsSaved,
		rep.Examined, rep.Matched, lt)
}

func printProposal(w io.Writer, p *kernel.Proposal, full bool) {
	fmt.Fprintf(w, "%s  %s\n", p.ID, p.Title)
	fmt.Fprintf(w, "  from %d approvals, %d refusals kept out · rule %s → %s\n", p.Approvals, p.Refusals, p.Rule.Name, p.Rule.Level)
	fmt.Fprintf(w, "  dry run: %s\n", dryRunLine(p.DryRun))
	for _, c := range p.DryRun.LetThrough {
		fmt.Fprintf(w, "    ! %s — %s\n", c.Summary, c.Why)
	}
	if !full {
		return
	}
	fmt.Fprintf(w, "  version: %s\n", p.Version)
	b, _ := json.MarshalIndent(p.Rule, "  ", "  ")
	fmt.Fprintf(w, "  rule:\n  %s\n", b)
	printReplay(w, p.DryRun, false)
}

func printReplay(w io.Writer, rep *firewall.ReplayReport, head bool) {
	if head {
		since := ""
		if !rep.Since.IsZero() {
			since = " since " + rep.Since.Local().Format(time.DateTime)
		}
		fmt.Fprintf(w, "Dry run of %s over %d past actions%s:\n", rep.Rule.Name, rep.Examined, since)
		fmt.Fprintf(w, "  matches %d; would have saved %d prompt(s); tightens %d\n", rep.Matched, rep.PromptsSaved, rep.Tightened)
	}
	section := func(title string, cases []firewall.ReplayCase, why bool) {
		fmt.Fprintf(w, "  %s: %d\n", title, len(cases))
		for _, c := range cases {
			line := fmt.Sprintf("    %s  %s  %s → %s", c.Time.Local().Format(time.DateTime), c.Summary, c.Without, c.With)
			if c.Answer != "" {
				line += " (" + answered(c.Answer) + " by " + c.Who + ")"
			}
			if why && c.Why != "" {
				line += " — " + c.Why
			}
			fmt.Fprintln(w, line)
		}
	}
	section("prompts saved", rep.Saved, false)
	section("refused or risky calls it would let through", rep.LetThrough, true)
	section("matched but held by a guard's floor or an admin rule", rep.Held, false)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

func answered(decision string) string {
	switch decision {
	case "approve":
		return "approved"
	case "deny":
		return "denied"
	case "abort":
		return "aborted"
	}
	return decision
}
