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
	"github.com/overseer-dev/overseer/internal/store"
)

// approvalItem is the stable JSON shape of `overseer approvals --json`.
type approvalItem struct {
	ID        string               `json:"id"`
	ActionID  string               `json:"action_id"`
	Tool      string               `json:"tool"`
	Kind      string               `json:"kind"`
	Level     string               `json:"level"`
	Status    store.ApprovalStatus `json:"status"`
	Agent     string               `json:"agent,omitempty"`
	Session   string               `json:"session,omitempty"`
	Summary   string               `json:"summary"`
	CreatedAt time.Time            `json:"created_at"`
	Deadline  time.Time            `json:"deadline"`
	Answer    *store.Answer        `json:"answer,omitempty"`
}

func itemOf(apr *store.Approval) approvalItem {
	return approvalItem{ID: apr.ID, ActionID: apr.ActionID, Tool: apr.Tool, Kind: string(apr.Kind),
		Level: apr.Level.String(), Status: apr.Status, Agent: apr.Agent, Session: apr.Session,
		Summary: apr.Verdict.Summary(), CreatedAt: apr.CreatedAt, Deadline: apr.Deadline, Answer: apr.Answer}
}

// listApprovals reads approvals from the daemon, or from the database when
// no daemon runs.
func (a *app) listApprovals(ctx context.Context, status string) ([]*store.Approval, error) {
	home, err := a.homeDir()
	if err != nil {
		return nil, err
	}
	if c, err := client.Discover(ctx, home); err == nil {
		return c.Approvals(ctx, status)
	}
	k, err := a.openExisting(ctx)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	f := store.ApprovalFilter{Status: store.ApprovalStatus(status)}
	if status == "all" {
		f.Status = ""
	}
	return k.Store.ListApprovals(ctx, f)
}

func (a *app) approvalsCmd() *cobra.Command {
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List actions waiting for a person's answer",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			status := "pending"
			if all {
				status = "all"
			}
			list, err := a.listApprovals(cmd.Context(), status)
			if err != nil {
				return err
			}
			items := make([]approvalItem, 0, len(list))
			for _, apr := range list {
				items = append(items, itemOf(apr))
			}
			if asJSON {
				return a.printJSON(items)
			}
			if len(items) == 0 {
				fmt.Fprintln(a.stdout, "No approvals are waiting.")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tLEVEL\tTOOL\tAGENT\tWAITING\tSTATUS\tWHY")
			now := time.Now()
			for _, it := range items {
				why := it.Summary
				if len(why) > 70 {
					why = why[:70] + "…"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.ID, it.Level, it.Tool, it.Agent,
					now.Sub(it.CreatedAt).Round(time.Second), it.Status, why)
			}
			tw.Flush()
			fmt.Fprintln(a.stdout, "\nAnswer with: overseer approve ID | overseer deny ID --reason \"…\"")
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array (id, tool, level, created_at, …)")
	cmd.Flags().BoolVar(&all, "all", false, "include answered approvals")
	return cmd
}

func (a *app) answerCmd(decision string) *cobra.Command {
	var reason, remember, rule, who string
	short := "Approve a pending action"
	if decision == "deny" {
		short = "Deny a pending action"
	}
	cmd := &cobra.Command{
		Use:   decision + " ID",
		Short: short,
		Long: short + `.

--remember once     answer this request only (the default)
--remember session  the same call with the same arguments in the same agent session is answered alike
--remember rule     save a rule in the user policy layer: the proposed one (shown by
                    'overseer approvals --json' / the web console), or your own with --rule '{…}' or --rule @file.json

Only a person answers: run under an AI agent (its environment markers, or an agent
CLI among this process's ancestors) the command refuses, and an agent's attempt to
run it is blocked by the shell guard. Answer from a terminal of your own, the web
console or 'overseer tui'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.AnswerRequest{Who: who, Channel: "cli", Reason: reason, Remember: remember}
			if req.Who == "" {
				req.Who = whoami()
			}
			if rule != "" {
				raw, err := readRuleArg(rule)
				if err != nil {
					return exit(2, err)
				}
				req.Rule = raw
				if req.Remember == "" {
					req.Remember = "rule"
				}
			}
			resp, err := a.answer(cmd.Context(), args[0], decision, req)
			if err != nil {
				return err
			}
			if !resp.Applied {
				fmt.Fprintf(a.stdout, "%s was already %s; your answer was recorded only.\n", args[0], resp.Approval.Status)
				return nil
			}
			fmt.Fprintf(a.stdout, "%s %s.\n", args[0], resp.Approval.Status)
			if resp.Warning != "" {
				fmt.Fprintln(a.stderr, "overseer: warning:", resp.Warning)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "your reason or an instruction for the agent (\"use ./build instead\")")
	cmd.Flags().StringVar(&remember, "remember", "", "once, session or rule")
	cmd.Flags().StringVar(&rule, "rule", "", "the rule to save with --remember rule, as JSON or @file")
	cmd.Flags().StringVar(&who, "who", "", "who answers (default: your user name)")
	return cmd
}

func readRuleArg(s string) (json.RawMessage, error) {
	if p, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		s = string(b)
	}
	if !json.Valid([]byte(s)) {
		return nil, errors.New("--rule must be a JSON object")
	}
	return json.RawMessage(s), nil
}

// answer answers through the daemon, or directly in the database when no
// daemon runs (a waiting caller elsewhere sees the answer when it polls).
func (a *app) answer(ctx context.Context, id, decision string, req client.AnswerRequest) (*client.AnswerResponse, error) {
	home, err := a.homeDir()
	if err != nil {
		return nil, err
	}
	if c, err := client.Discover(ctx, home); err == nil {
		return c.Answer(ctx, id, decision, req)
	}
	k, err := a.openExisting(ctx)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	apr, applied, err := k.Answer(ctx, id, store.Answer{Decision: decision, Who: req.Who, Channel: req.Channel,
		Reason: req.Reason, Remember: req.Remember, Rule: req.Rule})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("no approval %s (list them with `overseer approvals`)", id)
	}
	if err != nil && apr == nil {
		return nil, err
	}
	resp := &client.AnswerResponse{Approval: apr, Applied: applied}
	if err != nil {
		resp.Warning = err.Error()
	}
	return resp, nil
}
