package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
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
			k, err := a.open(cmd.Context())
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
			k, err := a.open(cmd.Context())
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
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Follow the audit log as records are written (Ctrl-C to stop)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := a.open(cmd.Context())
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
			for i := len(recent) - 1; i >= 0; i-- {
				_ = enc.Encode(recent[i])
			}
			if len(recent) > 0 {
				after = recent[0].Seq
			}
			err = audit.Tail(cmd.Context(), k.Store, after, 200*time.Millisecond, clock.Real{}, func(r store.AuditRecord) error {
				return enc.Encode(r)
			})
			if cmd.Context().Err() != nil {
				return nil
			}
			return err
		},
	}
	cmd.Flags().IntVarP(&last, "lines", "n", 10, "print this many recent records first")
	return cmd
}
