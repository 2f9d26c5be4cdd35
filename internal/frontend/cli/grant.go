package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/kernel"
)

func init() {
	extraCommands = append(extraCommands, func(a *app) *cobra.Command { return a.grantCmd() })
}

// grantBackend is where the grant commands go: the daemon when one runs
// for this home, else the database directly.
type grantBackend trustBackend

func (a *app) grantBackend(ctx context.Context) (*grantBackend, func(), error) {
	b, done, err := a.trust(ctx)
	return (*grantBackend)(b), done, err
}

func (b *grantBackend) list(ctx context.Context, active bool) ([]kernel.GrantView, error) {
	if b.c != nil {
		return b.c.Grants(ctx, active)
	}
	return b.k.ListGrants(ctx, active)
}

func (b *grantBackend) get(ctx context.Context, id string) (*kernel.GrantView, error) {
	if b.c != nil {
		return b.c.Grant(ctx, id)
	}
	return b.k.GetGrant(ctx, id)
}

func (b *grantBackend) issue(ctx context.Context, req httpapi.GrantRequest) (*kernel.Grant, error) {
	if b.c != nil {
		return b.c.IssueGrant(ctx, req)
	}
	if req.Expires.IsZero() && req.TTL > 0 {
		req.Expires = b.k.Clock.Now().Add(time.Duration(req.TTL))
	}
	return b.k.IssueGrant(ctx, req.GrantSpec, req.Who, req.Channel)
}

func (b *grantBackend) revoke(ctx context.Context, id string, req httpapi.RevokeRequest) (*kernel.Grant, error) {
	if b.c != nil {
		return b.c.RevokeGrant(ctx, id, req)
	}
	return b.k.RevokeGrant(ctx, id, req.Who, req.Channel, req.Reason)
}

func (a *app) grantCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "grant",
		Aliases: []string{"grants"},
		Short:   "Delegated mode: let an agent or sub-agent act without asking, within limits",
		Long: `A grant lets an agent (or one kind of its sub-agents) act without asking a person, inside an
allow-list — tools or kinds, directories, read-only, hosts — with budgets of steps, tokens, cost and
wall time, and an expiry. At its edge (a call outside the list, a budget spent, the expiry, a
revocation) the calls are put to a person again. Hard guards and the admin policy still apply inside.

  overseer grant issue --agent claude-code --session S --subagent-type general-purpose \
      --kind file_read --under ./docs --read-only --steps 50 --ttl 2h
  overseer grant list [--all]       the grants (active ones by default)
  overseer grant show ID
  overseer grant revoke ID          at once: the next call is judged without it

Only a person issues a grant: under an AI agent the command refuses, and the shell guard blocks it.`,
	}
	cmd.AddCommand(a.grantIssueCmd(), a.grantListCmd(), a.grantShowCmd(), a.grantRevokeCmd())
	return cmd
}

func (a *app) grantIssueCmd() *cobra.Command {
	var (
		req                   httpapi.GrantRequest
		p                     grant.Permit
		kinds                 []string
		under                 []string
		ttl, wall, expires    string
		specArg, who, channel string
		asJSON                bool
	)
	cmd := &cobra.Command{
		Use:   "issue",
		Short: "Issue a grant (one permit from the flags, or --spec @file.json)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.refuseUnderAgent(cmd, ""); err != nil {
				return err
			}
			if specArg != "" {
				raw, err := readRuleArg(specArg)
				if err != nil {
					return exit(2, err)
				}
				dec := json.NewDecoder(strings.NewReader(string(raw)))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&req); err != nil {
					return exit(2, fmt.Errorf("--spec: %w", err))
				}
			}
			if cmd.Flags().Changed("tool") || len(kinds) > 0 || len(under) > 0 || p.ReadOnly || len(p.Hosts) > 0 {
				for _, k := range kinds {
					p.Kinds = append(p.Kinds, action.Kind(k))
				}
				for _, d := range under {
					abs, err := absPath(d)
					if err != nil {
						return exit(2, err)
					}
					p.Under = append(p.Under, abs)
				}
				req.Allow = append(req.Allow, p)
			}
			var err error
			if ttl != "" {
				d, err := time.ParseDuration(ttl)
				if err != nil {
					return exit(2, fmt.Errorf("--ttl: %w", err))
				}
				req.TTL = grant.Duration(d)
			}
			if wall != "" {
				d, err := time.ParseDuration(wall)
				if err != nil {
					return exit(2, fmt.Errorf("--wall-time: %w", err))
				}
				req.Budget.WallTime = grant.Duration(d)
			}
			if expires != "" {
				if req.Expires, err = time.Parse(time.RFC3339, expires); err != nil {
					return exit(2, fmt.Errorf("--expires: %w", err))
				}
			}
			if req.Expires.IsZero() && req.TTL == 0 {
				return exit(2, errors.New("a grant needs an end: --ttl 2h or --expires 2026-11-25T18:00:00Z"))
			}
			req.Who, req.Channel = who, channel
			if req.Who == "" {
				req.Who = whoami()
			}
			b, done, err := a.grantBackend(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			g, err := b.issue(cmd.Context(), req)
			if err != nil {
				return exit(1, err)
			}
			if asJSON {
				return a.printJSON(g)
			}
			fmt.Fprintf(a.stdout, "Issued %s for %s until %s.\nRevoke with: overseer grant revoke %s\n",
				g.ID, g.Subject, g.Expires.Local().Format(time.RFC3339), g.ID)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Subject.Agent, "agent", "", "the agent (claude-code, codex, gemini, overseer, an MCP client's name)")
	f.StringVar(&req.Subject.Session, "session", "", "only this session of the agent (default: any)")
	f.StringVar(&req.Subject.SubagentType, "subagent-type", "", "sub-agents of this type, or * for any (default: the main agent only)")
	f.StringVar(&req.Subject.SubagentID, "subagent-id", "", "only the sub-agent with this id")
	f.StringSliceVar(&p.Tools, "tool", nil, "tools allowed, as the agent names them (globs: mcp__fs__*)")
	f.StringSliceVar(&kinds, "kind", nil, "kinds allowed: "+kindList())
	f.StringSliceVar(&under, "under", nil, "every path a call touches must lie under one of these directories")
	f.BoolVar(&p.ReadOnly, "read-only", false, "calls may only read")
	f.StringSliceVar(&p.Hosts, "host", nil, "hosts calls may reach")
	f.Int64Var(&req.Budget.Steps, "steps", 0, "at most this many calls (0: no limit)")
	f.Int64Var(&req.Budget.Tokens, "tokens", 0, "at most this many model tokens (where the entry point counts them)")
	f.Float64Var(&req.Budget.CostUSD, "cost", 0, "at most this cost in USD (where the entry point counts it)")
	f.StringVar(&wall, "wall-time", "", "at most this long from the first call (e.g. 30m)")
	f.StringVar(&ttl, "ttl", "", "the grant's life from now (e.g. 2h; at most 7 days)")
	f.StringVar(&expires, "expires", "", "the grant's end (RFC 3339)")
	f.StringVar(&req.Parent, "parent", "", "carve the grant out of this grant (it must lie within it)")
	f.StringVar(&req.Reason, "reason", "", "why (recorded)")
	f.StringVar(&specArg, "spec", "", "the whole request as JSON, or @file.json (flags add a permit)")
	f.StringVar(&who, "who", "", "who issues it (default: your user name)")
	f.StringVar(&channel, "channel", "cli", "the channel recorded")
	f.BoolVar(&asJSON, "json", false, "print the grant as JSON")
	return cmd
}

func kindList() string {
	var ks []string
	for _, k := range action.Kinds {
		ks = append(ks, string(k))
	}
	return strings.Join(ks, ", ")
}

func absPath(p string) (string, error) {
	if strings.HasPrefix(p, "~/") {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = h + p[1:]
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return action.ResolvePath(wd, p), nil
}

func (a *app) grantListCmd() *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the grants (active ones; --all for every grant)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, done, err := a.grantBackend(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			list, err := b.list(cmd.Context(), !all)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "No grant.")
				return nil
			}
			printGrants(a.stdout, list)
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also revoked, expired and spent grants")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printGrants(w io.Writer, list []kernel.GrantView) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSUBJECT\tALLOW\tUSED\tEXPIRES\tSTATE")
	for _, v := range list {
		state := "active"
		if !v.Active {
			state = v.Why
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.ID, v.Subject, permitsText(v.Allow), usageText(&v),
			v.Expires.Local().Format("2006-01-02 15:04"), state)
	}
	tw.Flush()
}

func permitsText(ps []grant.Permit) string {
	var out []string
	for _, p := range ps {
		var parts []string
		if len(p.Tools) > 0 {
			parts = append(parts, strings.Join(p.Tools, ","))
		}
		for _, k := range p.Kinds {
			parts = append(parts, string(k))
		}
		if p.ReadOnly {
			parts = append(parts, "read-only")
		}
		if len(p.Under) > 0 {
			parts = append(parts, "under "+strings.Join(p.Under, ","))
		}
		if len(p.Hosts) > 0 {
			parts = append(parts, "hosts "+strings.Join(p.Hosts, ","))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return strings.Join(out, "; ")
}

func usageText(v *kernel.GrantView) string {
	s := fmt.Sprint(v.Usage.Steps)
	if v.Budget.Steps > 0 {
		s += fmt.Sprintf("/%d", v.Budget.Steps)
	}
	return s + " steps"
}

func (a *app) grantShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one grant as JSON, with its use",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, done, err := a.grantBackend(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			v, err := b.get(cmd.Context(), args[0])
			if err != nil {
				return exit(1, err)
			}
			return a.printJSON(v)
		},
	}
	return cmd
}

func (a *app) grantRevokeCmd() *cobra.Command {
	var req httpapi.RevokeRequest
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a grant (and every grant carved out of it) at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if req.Who == "" {
				req.Who = whoami()
			}
			b, done, err := a.grantBackend(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			g, err := b.revoke(cmd.Context(), args[0], req)
			if err != nil {
				return exit(1, err)
			}
			fmt.Fprintf(a.stdout, "Revoked %s (%s): its next call is put to a person.\n", g.ID, g.Subject)
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Who, "who", "", "who revokes it (default: your user name)")
	cmd.Flags().StringVar(&req.Channel, "channel", "cli", "the channel recorded")
	cmd.Flags().StringVar(&req.Reason, "reason", "", "why (recorded)")
	return cmd
}
