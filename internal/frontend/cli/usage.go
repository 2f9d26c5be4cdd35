package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/usage"
)

// Rate limits and budget caps from the command line: `overseer limits …`
// and `overseer budget …`, through the daemon when one runs for this
// home, else on the database. Each change is an audit record naming who.

func init() {
	extraCommands = append(extraCommands,
		func(a *app) *cobra.Command { return a.limitsCmd() },
		func(a *app) *cobra.Command { return a.budgetCmd() })
}

// usageBackend is the daemon or the kernel on the database.
type usageBackend trustBackend

func (a *app) usageBackend(ctx context.Context) (*usageBackend, func(), error) {
	b, done, err := a.trust(ctx)
	return (*usageBackend)(b), done, err
}

func (b *usageBackend) limits(ctx context.Context) ([]usage.RateLimit, error) {
	if b.c != nil {
		return b.c.RateLimits(ctx)
	}
	return b.k.RateLimits(), nil
}

func (b *usageBackend) putLimit(ctx context.Context, l usage.RateLimit, create bool, who string) (usage.RateLimit, error) {
	if b.c != nil {
		return b.c.PutRateLimit(ctx, l, create, who)
	}
	return b.k.PutRateLimit(ctx, l, who)
}

func (b *usageBackend) deleteLimit(ctx context.Context, id, who string) error {
	if b.c != nil {
		return b.c.DeleteRateLimit(ctx, id, who)
	}
	return b.k.DeleteRateLimit(ctx, id, who)
}

func (b *usageBackend) uses(ctx context.Context) ([]usage.LimitUse, error) {
	if b.c != nil {
		return b.c.RateUsage(ctx)
	}
	return b.k.LimitUses(), nil
}

func (b *usageBackend) caps(ctx context.Context) ([]usage.BudgetCap, error) {
	if b.c != nil {
		return b.c.BudgetCaps(ctx)
	}
	return b.k.BudgetCaps(), nil
}

func (b *usageBackend) putCap(ctx context.Context, c usage.BudgetCap, create bool, who string) (usage.BudgetCap, error) {
	if b.c != nil {
		return b.c.PutBudgetCap(ctx, c, create, who)
	}
	return b.k.PutBudgetCap(ctx, c, who)
}

func (b *usageBackend) deleteCap(ctx context.Context, id, who string) error {
	if b.c != nil {
		return b.c.DeleteBudgetCap(ctx, id, who)
	}
	return b.k.DeleteBudgetCap(ctx, id, who)
}

func (b *usageBackend) budgets(ctx context.Context) ([]usage.Status, error) {
	if b.c != nil {
		return b.c.Budgets(ctx)
	}
	return b.k.Budgets(), nil
}

func (b *usageBackend) prices(ctx context.Context) (usage.Prices, error) {
	if b.c != nil {
		return b.c.Prices(ctx)
	}
	return b.k.Prices(), nil
}

func (b *usageBackend) setPrices(ctx context.Context, p usage.Prices, who string) error {
	if b.c != nil {
		return b.c.SetPrices(ctx, p, who)
	}
	return b.k.SetPrices(ctx, p, who)
}

func (a *app) limitsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "limits",
		Short: "Rate limits: at most N calls of an agent, a tool, a risk class or an effect in a sliding window",
		Long: `Rate limits count an agent's calls in a sliding window; at the limit the call is refused and the
agent paused (pause, the default), refused (block), put to a person (ask), or only reported (notify_only).
Agent and tool empty mean every agent (each counted on its own) and every tool.

  overseer limits                     list the limits
  overseer limits add --max 50 --window 1h [--agent A] [--tool T] [--risk confirm] [--effect delete] [--action pause]
  overseer limits set ID --max 100    change a limit (only the flags given)
  overseer limits rm ID               remove a limit
  overseer limits usage               each limit's count per agent now`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.limitsList(cmd.Context(), false) },
	}
	list := &cobra.Command{Use: "list", Short: "List the rate limits", Args: cobra.NoArgs}
	var asJSON bool
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	list.RunE = func(cmd *cobra.Command, _ []string) error { return a.limitsList(cmd.Context(), asJSON) }
	cmd.AddCommand(list, a.limitsPutCmd(true), a.limitsPutCmd(false), a.usageRmCmd("rate limit", (*usageBackend).deleteLimit), a.limitsUsageCmd())
	return cmd
}

func (a *app) limitsList(ctx context.Context, asJSON bool) error {
	b, done, err := a.usageBackend(ctx)
	if err != nil {
		return err
	}
	defer done()
	list, err := b.limits(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if list == nil {
			list = []usage.RateLimit{}
		}
		return a.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(a.stdout, "No rate limit. Add one with: overseer limits add --max 50 --window 1h")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tTOOL\tRISK\tEFFECT\tMAX\tWINDOW\tACTION\tENABLED")
	for _, l := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%v\n", l.ID, orAll(l.Agent), orAll(l.Tool), orDash(l.Risk), orDash(l.Effect),
			l.MaxCalls, l.Window(), l.Action, l.Enabled)
	}
	return tw.Flush()
}

func orAll(s string) string {
	if s == "" {
		return "(all)"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) limitsPutCmd(create bool) *cobra.Command {
	var (
		l        usage.RateLimit
		window   time.Duration
		disabled bool
		who      string
	)
	cmd := &cobra.Command{Use: "add", Short: "Add a rate limit", Args: cobra.NoArgs}
	if !create {
		cmd = &cobra.Command{Use: "set ID", Short: "Change a rate limit (only the flags given)", Args: cobra.ExactArgs(1)}
	}
	f := cmd.Flags()
	f.StringVar(&l.Name, "name", "", "a name for people")
	f.StringVar(&l.Agent, "agent", "", "the agent (default: every agent, each counted on its own)")
	f.StringVar(&l.Tool, "tool", "", "the tool, or a glob (default: every tool)")
	f.StringVar(&l.Risk, "risk", "", "count only calls judged at this level or above: notify, confirm, approve")
	f.StringVar(&l.Effect, "effect", "", "count only calls with this effect: write, delete, exec, send, new_host")
	f.IntVar(&l.MaxCalls, "max", 0, "at most this many calls in the window")
	f.DurationVar(&window, "window", time.Hour, "the sliding window")
	f.StringVar((*string)(&l.Action), "action", string(usage.Pause), "at the limit: pause, block, ask or notify_only")
	f.BoolVar(&disabled, "disabled", false, "add or set it disabled")
	f.StringVar(&who, "who", "", "who makes the change (default: your user name)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := a.refuseUnderAgent(cmd, ""); err != nil {
			return err
		}
		b, done, err := a.usageBackend(cmd.Context())
		if err != nil {
			return err
		}
		defer done()
		if who == "" {
			who = whoami()
		}
		if !create {
			list, err := b.limits(cmd.Context())
			if err != nil {
				return err
			}
			var cur *usage.RateLimit
			for i := range list {
				if list[i].ID == args[0] {
					cur = &list[i]
				}
			}
			if cur == nil {
				return exit(1, fmt.Errorf("no rate limit %s (list them with `overseer limits`)", args[0]))
			}
			merged := *cur
			set := func(name string, apply func()) {
				if cmd.Flags().Changed(name) {
					apply()
				}
			}
			set("name", func() { merged.Name = l.Name })
			set("agent", func() { merged.Agent = l.Agent })
			set("tool", func() { merged.Tool = l.Tool })
			set("risk", func() { merged.Risk = l.Risk })
			set("effect", func() { merged.Effect = l.Effect })
			set("max", func() { merged.MaxCalls = l.MaxCalls })
			set("window", func() { merged.WindowSeconds = int(window / time.Second) })
			set("action", func() { merged.Action = l.Action })
			set("disabled", func() { merged.Enabled = !disabled })
			l = merged
		} else {
			l.WindowSeconds, l.Enabled = int(window/time.Second), !disabled
		}
		out, err := b.putLimit(cmd.Context(), l, create, who)
		if err != nil {
			return exit(1, err)
		}
		fmt.Fprintf(a.stdout, "Rate limit %s: at most %d calls in %s, then %s.\n", out.ID, out.MaxCalls, out.Window(), out.Action)
		return nil
	}
	return cmd
}

// usageRmCmd removes a rate limit or a budget cap (what) with remove; it
// is refused under an agent.
func (a *app) usageRmCmd(what string, remove func(b *usageBackend, ctx context.Context, id, who string) error) *cobra.Command {
	var who string
	cmd := &cobra.Command{
		Use: "rm ID", Aliases: []string{"remove"}, Short: "Remove a " + what, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.refuseUnderAgent(cmd, ""); err != nil {
				return err
			}
			b, done, err := a.usageBackend(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			if who == "" {
				who = whoami()
			}
			if err := remove(b, cmd.Context(), args[0], who); err != nil {
				return missing(err, what, args[0])
			}
			fmt.Fprintf(a.stdout, "Removed %s %s.\n", what, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&who, "who", "", "who removes it (default: your user name)")
	return cmd
}

func missing(err error, what, id string) error {
	var api *client.APIError
	if errors.Is(err, kernel.ErrNoControl) || errors.As(err, &api) && api.Status == 404 {
		return exit(1, fmt.Errorf("no %s %s", what, id))
	}
	return err
}

func (a *app) limitsUsageCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "usage", Short: "Each rate limit's count per agent now", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, done, err := a.usageBackend(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			list, err := b.uses(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []usage.LimitUse{}
				}
				return a.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "No calls counted.")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LIMIT\tAGENT\tCOUNT\tMAX\tWINDOW\tUSE")
			for _, u := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", u.Limit.ID, u.Agent, u.Count, u.Limit.MaxCalls, u.Limit.Window(), bar(u.Share))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// bar draws a share as a gauge of ten cells and a percentage.
func bar(share float64) string {
	n := int(share*10 + 0.5)
	n = max(0, min(n, 10))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", 10-n) + fmt.Sprintf("] %3.0f%%", 100*share)
}

func (a *app) budgetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "Budget caps: at most so many US dollars of model use per day, week, month or session",
		Long: `Budget caps count what agents' models cost (the own loop's calls; Claude Code's and Codex's reports,
read by their hooks), priced from a table you can change. At a cap: stop (calls are refused until the
period ends), notify, or downgrade (the own loop switches to the router's cheaper model; other agents are
told and refused at the hard cap). A person is told at 80% and at 100%.

  overseer budget                     each cap's spend in its period
  overseer budget add --max-usd 10 [--scope agent --scope-id codex] [--period daily] [--action stop]
  overseer budget set ID --max-usd 20 change a cap (only the flags given)
  overseer budget rm ID               remove a cap
  overseer budget prices [--set @prices.json]   the price table (USD per million tokens)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.budgetStatus(cmd.Context(), false) },
	}
	status := &cobra.Command{Use: "status", Short: "Each cap's spend in its current period", Args: cobra.NoArgs}
	var asJSON bool
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	status.RunE = func(cmd *cobra.Command, _ []string) error { return a.budgetStatus(cmd.Context(), asJSON) }
	cmd.AddCommand(status, a.budgetPutCmd(true), a.budgetPutCmd(false), a.usageRmCmd("budget cap", (*usageBackend).deleteCap), a.budgetPricesCmd())
	return cmd
}

func (a *app) budgetStatus(ctx context.Context, asJSON bool) error {
	b, done, err := a.usageBackend(ctx)
	if err != nil {
		return err
	}
	defer done()
	list, err := b.budgets(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if list == nil {
			list = []usage.Status{}
		}
		return a.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(a.stdout, "No budget cap. Add one with: overseer budget add --max-usd 10")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCOPE\tPERIOD\tSPENT\tCAP\tACTION\tUSE")
	for _, s := range list {
		scope := s.Cap.Scope
		if s.Key != "" {
			scope += " " + s.Key
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t$%.2f\t$%.2f\t%s\t%s\n", s.Cap.ID, scope, s.Cap.Period, s.Spent, s.Cap.MaxCostUSD, s.Cap.Action, bar(s.Share))
	}
	return tw.Flush()
}

func (a *app) budgetPutCmd(create bool) *cobra.Command {
	var (
		c        usage.BudgetCap
		disabled bool
		who      string
	)
	cmd := &cobra.Command{Use: "add", Short: "Add a budget cap", Args: cobra.NoArgs}
	if !create {
		cmd = &cobra.Command{Use: "set ID", Short: "Change a budget cap (only the flags given)", Args: cobra.ExactArgs(1)}
	}
	f := cmd.Flags()
	f.StringVar(&c.Name, "name", "", "a name for people")
	f.StringVar(&c.Scope, "scope", usage.ScopeGlobal, "global, agent or session")
	f.StringVar(&c.ScopeID, "scope-id", "", "the agent or session (default: each on its own)")
	f.Float64Var(&c.MaxCostUSD, "max-usd", 0, "the cap in US dollars")
	f.Float64Var(&c.HardCostUSD, "hard-usd", 0, "downgrade caps: where calls are refused (default 1.5 × the cap)")
	f.StringVar(&c.Period, "period", usage.Daily, "daily, weekly, monthly or session")
	f.StringVar((*string)(&c.Action), "action", string(usage.Stop), "at the cap: stop, notify or downgrade")
	f.BoolVar(&disabled, "disabled", false, "add or set it disabled")
	f.StringVar(&who, "who", "", "who makes the change (default: your user name)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := a.refuseUnderAgent(cmd, ""); err != nil {
			return err
		}
		b, done, err := a.usageBackend(cmd.Context())
		if err != nil {
			return err
		}
		defer done()
		if who == "" {
			who = whoami()
		}
		if !create {
			list, err := b.caps(cmd.Context())
			if err != nil {
				return err
			}
			var cur *usage.BudgetCap
			for i := range list {
				if list[i].ID == args[0] {
					cur = &list[i]
				}
			}
			if cur == nil {
				return exit(1, fmt.Errorf("no budget cap %s (list them with `overseer budget`)", args[0]))
			}
			m := *cur
			set := func(name string, apply func()) {
				if cmd.Flags().Changed(name) {
					apply()
				}
			}
			set("name", func() { m.Name = c.Name })
			set("scope", func() { m.Scope = c.Scope })
			set("scope-id", func() { m.ScopeID = c.ScopeID })
			set("max-usd", func() { m.MaxCostUSD = c.MaxCostUSD })
			set("hard-usd", func() { m.HardCostUSD = c.HardCostUSD })
			set("period", func() { m.Period = c.Period })
			set("action", func() { m.Action = c.Action })
			set("disabled", func() { m.Enabled = !disabled })
			c = m
		} else {
			c.Enabled = !disabled
		}
		out, err := b.putCap(cmd.Context(), c, create, who)
		if err != nil {
			return exit(1, err)
		}
		fmt.Fprintf(a.stdout, "Budget cap %s: $%.2f %s (%s), then %s.\n", out.ID, out.MaxCostUSD, out.Period, out.Scope, out.Action)
		return nil
	}
	return cmd
}

func (a *app) budgetPricesCmd() *cobra.Command {
	var set, who string
	cmd := &cobra.Command{
		Use:   "prices [--set JSON|@file]",
		Short: "Show or replace the price table (USD per million input and output tokens; \"model*\" matches a prefix)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, done, err := a.usageBackend(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			if set != "" {
				if err := a.refuseUnderAgent(cmd, "set"); err != nil {
					return err
				}
				raw := []byte(set)
				if strings.HasPrefix(set, "@") {
					if raw, err = os.ReadFile(set[1:]); err != nil {
						return err
					}
				}
				var p usage.Prices
				if err := json.Unmarshal(raw, &p); err != nil {
					return exit(1, fmt.Errorf("the price table is not valid JSON: %w", err))
				}
				if who == "" {
					who = whoami()
				}
				if err := b.setPrices(cmd.Context(), p, who); err != nil {
					return exit(1, err)
				}
			}
			p, err := b.prices(cmd.Context())
			if err != nil {
				return err
			}
			return a.printJSON(p)
		},
	}
	cmd.Flags().StringVar(&set, "set", "", `the new table: {"model": {"input_per_mtok": 3, "output_per_mtok": 15}}, or @file`)
	cmd.Flags().StringVar(&who, "who", "", "who makes the change (default: your user name)")
	return cmd
}
