package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/action"
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
	Cwd       string               `json:"cwd,omitempty"`     // where the action runs
	Subject   string               `json:"subject,omitempty"` // the command, path, URL or query
	Summary   string               `json:"summary"`
	CreatedAt time.Time            `json:"created_at"`
	Deadline  time.Time            `json:"deadline"`
	Asker     *store.Asker         `json:"asker,omitempty"`
	Answer    *store.Answer        `json:"answer,omitempty"`
}

func itemOf(apr *store.Approval) approvalItem {
	return approvalItem{ID: apr.ID, ActionID: apr.ActionID, Tool: apr.Tool, Kind: string(apr.Kind),
		Level: apr.Level.String(), Status: apr.Status, Agent: apr.Agent, Session: apr.Session,
		Cwd: apr.Action.Cwd, Subject: subjectOf(&apr.Action), Summary: apr.Verdict.Summary(),
		CreatedAt: apr.CreatedAt, Deadline: apr.Deadline, Asker: apr.Asker, Answer: apr.Answer}
}

// subjectOf is what a person most needs to see of an action: its command,
// path, URL or query, else its arguments.
func subjectOf(a *action.Action) string {
	if v, ok := a.Subject(); ok {
		return v
	}
	if len(a.Args) == 0 {
		return ""
	}
	b, err := json.Marshal(a.Args)
	if err != nil {
		return ""
	}
	return string(b)
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
		Long: `List the actions waiting for a person's answer, oldest first: for each, what
it would run and where (the working directory), which agent and session asked,
how long it has waited and when it times out, and who holds the call (a hook
process, an MCP client). A request nobody waits for any more — its hook was
killed or gave up, its client went away — is withdrawn by the daemon and leaves
this list; --all shows it as withdrawn.`,
		Args: cobra.NoArgs,
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
			printApprovals(a.stdout, items, time.Now(), userHome())
			fmt.Fprintln(a.stdout, "\nAnswer with: overseer approve ID | overseer deny ID --reason \"…\"")
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array (id, tool, level, agent, session, cwd, subject, created_at, asker, …)")
	cmd.Flags().BoolVar(&all, "all", false, "include answered and withdrawn approvals")
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

// printApprovals writes one block per approval: the request, then what it
// runs, where, for whom, and who waits for it.
func printApprovals(w io.Writer, items []approvalItem, now time.Time, home string) {
	for i, it := range items {
		if i > 0 {
			fmt.Fprintln(w)
		}
		when := "waiting " + ago(now.Sub(it.CreatedAt))
		if it.Status == store.StatusPending {
			if left := it.Deadline.Sub(now); left > 0 {
				when += " · times out in " + ago(left)
			} else {
				when += " · timing out"
			}
		} else {
			when = fmt.Sprintf("asked %s ago · %s", ago(now.Sub(it.CreatedAt)), answerLine(it))
		}
		fmt.Fprintf(w, "%s  %s  %s  %s\n", it.ID, it.Level, it.Tool, when)
		field := func(name, v string) {
			if v != "" {
				fmt.Fprintf(w, "  %-8s %s\n", name, oneLine(v, 200))
			}
		}
		field("runs", it.Subject)
		field("in", tildeHome(it.Cwd, home))
		who := it.Agent
		if it.Session != "" {
			who = strings.TrimPrefix(who+" · session "+it.Session, " · ")
		}
		field("agent", who)
		field("asker", askerLine(it.Asker, now))
		field("why", it.Summary)
	}
}

func answerLine(it approvalItem) string {
	if it.Answer == nil {
		return string(it.Status)
	}
	s := fmt.Sprintf("%s by %s via %s", it.Status, it.Answer.Who, it.Answer.Channel)
	if it.Answer.Who == it.Answer.Channel {
		s = string(it.Status)
	}
	if it.Answer.Reason != "" {
		s += ": " + it.Answer.Reason
	}
	return s
}

// askerLine says who holds the call.
func askerLine(a *store.Asker, now time.Time) string {
	if a == nil {
		return ""
	}
	s := a.Kind
	if a.PID > 0 {
		s += fmt.Sprintf(", process %d", a.PID)
	}
	if !a.Until.IsZero() {
		if left := a.Until.Sub(now); left > 0 {
			s += ", waits " + ago(left) + " more"
		}
	}
	return s
}

// ago is a duration rounded for people: 42s, 3m05s, 2h10m.
func ago(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

// tildeHome writes a path under the user's home directory as ~/….
func tildeHome(p, home string) string {
	if home == "" || home == "/" || p == "" {
		return p
	}
	if p == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(p, strings.TrimSuffix(home, "/")+"/"); ok {
		return "~/" + rest
	}
	return p
}
