package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

func (a *app) auditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Verify, export and follow the tamper-evident audit log",
	}
	cmd.AddCommand(a.auditVerifyCmd(), a.auditExportCmd(), a.auditTailCmd())
	return cmd
}

func (a *app) auditVerifyCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the audit log's hash chain; name the first altered, inserted or missing record",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := a.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer k.Close()
			rep, err := audit.Verify(cmd.Context(), k.Store)
			if err != nil {
				return err
			}
			if asJSON {
				if err := a.printJSON(rep); err != nil {
					return err
				}
			} else if rep.OK {
				fmt.Fprintf(a.stdout, "audit log OK: %d records, chain intact up to record %d\n", rep.Records, rep.LastSeq)
			}
			if !rep.OK {
				return exit(1, fmt.Errorf("audit log verification FAILED at record %d: %s", rep.FirstBad, rep.Problem))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func (a *app) auditExportCmd() *cobra.Command {
	var format, since string
	var after int64
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Stream audit records (JSON lines)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "jsonl" {
				return exit(2, fmt.Errorf("unknown --format %q (supported: jsonl)", format))
			}
			q := store.AuditQuery{AfterSeq: after}
			if since != "" {
				t, err := time.Parse(time.RFC3339, since)
				if err != nil {
					return exit(2, fmt.Errorf("--since must be an RFC 3339 time: %w", err))
				}
				q.Since = t
			}
			k, err := a.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer k.Close()
			w := bufio.NewWriter(a.stdout)
			if err := audit.Export(cmd.Context(), k.Store, q, w); err != nil {
				return err
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&format, "format", "jsonl", "output format (jsonl)")
	cmd.Flags().Int64Var(&after, "after", 0, "only records after this sequence number")
	cmd.Flags().StringVar(&since, "since", "", "only records at or after this time (RFC 3339)")
	return cmd
}

func (a *app) auditTailCmd() *cobra.Command {
	var last int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Follow the audit log as records are written, one readable line each (Ctrl-C to stop)",
		Long: `Follow the audit log as records are written (Ctrl-C to stop): one line per record,
  #SEQ  TIME  TYPE  AGENT/SESSION  what happened
--json prints each record whole, as one JSON object per line (like 'overseer audit export').`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := a.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer k.Close()
			var after int64
			recent, err := k.Store.QueryAudit(cmd.Context(), store.AuditQuery{Desc: true, Limit: last})
			if err != nil {
				return err
			}
			enc := json.NewEncoder(a.stdout)
			print := func(r store.AuditRecord) error {
				if asJSON {
					return enc.Encode(r)
				}
				_, err := fmt.Fprintln(a.stdout, auditLine(r))
				return err
			}
			for i := len(recent) - 1; i >= 0; i-- {
				_ = print(recent[i])
			}
			if len(recent) > 0 {
				after = recent[0].Seq
			}
			err = audit.Tail(cmd.Context(), k.Store, after, 200*time.Millisecond, clock.Real{}, print)
			if cmd.Context().Err() != nil {
				return nil
			}
			return err
		},
	}
	cmd.Flags().IntVarP(&last, "lines", "n", 10, "print this many recent records first")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each record as a JSON line")
	return cmd
}

// auditLine is one audit record on one line, for a person.
func auditLine(r store.AuditRecord) string {
	who := strings.Trim(r.Agent+"/"+r.Session, "/")
	if who == "" {
		who = "-"
	}
	return fmt.Sprintf("#%-6d %s  %-16s %-22s %s", r.Seq, r.Time.Local().Format("2006-01-02 15:04:05"), r.Type,
		oneLine(who, 22), oneLine(auditWhat(r), 160))
}

// auditWhat says what a record is about.
func auditWhat(r store.AuditRecord) string {
	switch r.Type {
	case audit.TypeAction:
		var a action.Action
		if json.Unmarshal(r.Data, &a) == nil {
			s := firewall.CallSummary(&a, 140)
			if a.Cwd != "" {
				s += "  (in " + a.Cwd + ")"
			}
			return s
		}
	case audit.TypeVerdict:
		var v action.Verdict
		if json.Unmarshal(r.Data, &v) == nil {
			return v.Summary()
		}
	case audit.TypeApprovalRequest:
		var apr store.Approval
		if json.Unmarshal(r.Data, &apr) == nil {
			return fmt.Sprintf("asks a person: %s (%s), answer by %s", apr.ID, apr.Level, apr.Deadline.Local().Format("15:04:05"))
		}
	case audit.TypeAnswer:
		var ans struct {
			ApprovalID string               `json:"approval_id"`
			Status     store.ApprovalStatus `json:"status"`
			Answer     store.Answer         `json:"answer"`
		}
		if json.Unmarshal(r.Data, &ans) == nil {
			s := fmt.Sprintf("%s %s by %s via %s", ans.ApprovalID, ans.Answer.Decision, ans.Answer.Who, ans.Answer.Channel)
			if ans.Answer.Reason != "" {
				s += ": " + ans.Answer.Reason
			}
			if !ans.Answer.Applied {
				s += " (late: recorded only)"
			}
			return s
		}
	case audit.TypeResult:
		var res kernel.ResultRecord
		if json.Unmarshal(r.Data, &res) == nil {
			s := res.Class
			if res.IsError {
				s += " (error)"
			}
			if res.Repeated {
				s += " (repeated)"
			}
			if out := strings.TrimSpace(res.Output); out != "" {
				s += ": " + out
			}
			return s
		}
	case audit.TypePolicyChange:
		var pc kernel.PolicyChange
		if json.Unmarshal(r.Data, &pc) == nil {
			s := fmt.Sprintf("%s %s rule %s", pc.Origin, pc.Op, pc.RuleID)
			if pc.After.Valid() {
				s += " → " + pc.After.String()
			}
			if pc.Reason != "" {
				s += ": " + pc.Reason
			}
			return s
		}
	case kernel.TypeProposal:
		var pc kernel.ProposalChange
		if json.Unmarshal(r.Data, &pc) == nil {
			return fmt.Sprintf("%s %s by %s: %s", pc.Proposal, pc.Op, pc.Who, pc.Title)
		}
	}
	return string(r.Data)
}
