package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/frontend/web"
	"github.com/overseer-dev/overseer/internal/guard/resultscan"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

func (a *app) auditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Verify, export and follow the tamper-evident audit log",
	}
	cmd.AddCommand(a.auditVerifyCmd(), a.auditKeyCmd(), a.auditExportCmd(), a.auditTailCmd())
	cmd.AddCommand(a.auditIngestCmd(), a.auditRollbackCmd())
	return cmd
}

// VerifyReport is what `overseer audit verify --json` prints: the chain's
// report and the rules and approvals with no audited record behind them.
type VerifyReport struct {
	audit.Report
	Findings []kernel.Finding `json:"findings,omitempty"`
	// PendingKey is true while the verification key still waits in the
	// home to be exported: until then the seal proves nothing.
	PendingKey bool `json:"pending_key,omitempty"`
}

// openStore opens the home's database without the kernel: verify and key
// must work on a log whose sealing state the kernel would refuse.
func (a *app) openStore(ctx context.Context) (string, store.Store, error) {
	home, err := a.homeDir()
	if err != nil {
		return "", nil, err
	}
	if err := checkHome(home, runningDaemons()); err != nil {
		// No database here: say where the daemon's home is, if one runs.
		return home, nil, exit(1, err)
	}
	pol, _, err := kernel.LoadPolicy(home, a.policy)
	if err != nil {
		return home, nil, err
	}
	if kernel.StoreURL(pol) == "" {
		p := filepath.Join(home, kernel.DBFile)
		if _, err := os.Stat(p); err != nil {
			return home, nil, fmt.Errorf("no audit log at %s: %w", p, err)
		}
	}
	st, err := kernel.OpenStore(ctx, home, pol)
	return home, st, err
}

func (a *app) auditVerifyCmd() *cobra.Command {
	var (
		asJSON  bool
		keyArg  string
		anchors []string
	)
	cmd := &cobra.Command{
		Use:   "verify [--key KEY|FILE] [--anchor FILE|URL]...",
		Short: "Check the audit log: its hash chain, its seal, its end, and the rules and approvals it backs",
		Long: `Check the audit log and name the first bad record and the time range affected.

Without --key only the unkeyed hash chain is checked: it finds accidental
damage and careless edits, but someone who can write the database could
rewrite the whole chain. With --key (the verification key shown once at
first start, or the file 'overseer audit key --out' wrote) every record's
seal is checked: records sealed before someone took the current sealing
key cannot be altered, removed, reordered or inserted unnoticed, and a key
file ahead of the log shows epochs cut from its end.

--anchor checks the log against chain heads the daemon published (a file of
JSON lines, or an http(s) URL serving them: a webhook receiver's log, an ntfy
topic's JSON stream, 'journalctl -t overseer-audit -o cat'): a published
head missing from the log shows a cut or a rollback.

The user policy rules and the approvals are checked against the records
behind them: one with no audited record is reported (and refused by the
daemon). Exit status 1 when anything is wrong.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var o audit.Options
			if keyArg != "" {
				k, err := audit.ReadVerifyKey(keyArg)
				if err != nil {
					return exit(2, err)
				}
				o.Key = &k
			}
			for _, an := range anchors {
				heads, err := audit.LoadHeads(ctx, an)
				if err != nil {
					return exit(2, fmt.Errorf("--anchor %s: %w", an, err))
				}
				o.Heads = append(o.Heads, heads...)
			}
			home, st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			o.SealFile = filepath.Join(home, audit.SealFile)
			// A database shared by several instances: each home holds a
			// copy of the key, which may lag the log (docs/deploy.md).
			_, o.KeyCopies = st.(store.Watcher)
			rep, err := audit.VerifyWith(ctx, st, o)
			if err != nil {
				return err
			}
			out := VerifyReport{Report: rep}
			if _, err := audit.PendingKey(home); err == nil {
				out.PendingKey = true
			}
			// Records the key proved need no instance's signature (those
			// written before records were signed): they are the instances'.
			var sealed int64
			if o.Key != nil && rep.OK && rep.SealChecked {
				sealed = rep.LastSeq
			}
			if out.Findings, err = kernel.FindingsOf(ctx, home, st, time.Now(), true, sealed); err != nil {
				return err
			}
			if asJSON {
				if err := a.printJSON(out); err != nil {
					return err
				}
			} else {
				a.printVerify(out, o.Key != nil)
			}
			switch {
			case !rep.OK:
				return exit(1, fmt.Errorf("audit log verification FAILED at record %d: %s", rep.FirstBad, rep.Problem))
			case len(out.Findings) > 0:
				return exit(1, fmt.Errorf("audit log verification FAILED: %d rules or approvals have no audited record behind them",
					len(out.Findings)))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&keyArg, "key", "", "the verification key, or a file holding it: check the seal")
	cmd.Flags().StringArrayVar(&anchors, "anchor", nil, "published chain heads (a file of JSON lines, or an http(s) URL): check the log's end")
	return cmd
}

func fmtT(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

// printVerify prints a verification for people.
func (a *app) printVerify(r VerifyReport, keyed bool) {
	w := a.stdout
	if r.OK {
		fmt.Fprintf(w, "audit log OK: %d records, chain intact up to record %d\n", r.Records, r.LastSeq)
	} else {
		fmt.Fprintf(w, "audit log BAD: first bad record %d: %s\n", r.FirstBad, r.Problem)
		from, until := fmtT(r.BadFrom), fmtT(r.BadUntil)
		if from == "" {
			from = "the start of the log"
		}
		if until == "" {
			until = "now"
		}
		fmt.Fprintf(w, "  affected: records %d to %d, written between %s and %s\n", r.FirstBad, max(r.LastBad, r.FirstBad), from, until)
		for i, p := range r.Problems {
			if i == 10 {
				fmt.Fprintf(w, "  … and %d more problems (--json lists them all)\n", len(r.Problems)-10)
				break
			}
			fmt.Fprintf(w, "  - record %d: %s\n", p.Seq, p.What)
		}
	}
	switch {
	case r.SealChecked:
		fmt.Fprintf(w, "seal: checked with key %s; %d epochs closed", r.Fingerprint, r.Epochs)
		if r.SealedThrough > 0 {
			fmt.Fprintf(w, ", sealed through record %d (%s)", r.SealedThrough, fmtT(r.SealedAt))
		}
		fmt.Fprintln(w)
	case r.Sealed:
		fmt.Fprintf(w, "seal: the log is sealed (key %s, %d epochs closed) but the seal was not checked: give --key\n",
			r.Fingerprint, r.Epochs)
	}
	if r.Anchors > 0 {
		fmt.Fprintf(w, "anchor: %d published heads checked\n", r.Anchors)
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "unaudited %s\n", f)
	}
	if r.PendingKey {
		fmt.Fprintln(w, "warning: the verification key still waits in Overseer's home: until you move it out "+
			"(overseer audit key --out FILE) the seal proves nothing against someone who can read that file")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	_ = keyed
}

func (a *app) auditKeyCmd() *cobra.Command {
	var (
		out    string
		forget bool
	)
	cmd := &cobra.Command{
		Use:   "key [--out FILE | --forget]",
		Short: "Set up the audit log's seal, or export its verification key out of Overseer's home",
		Long: `The audit log is sealed with a key that evolves: the verification key, from
which every sealing key derives, is shown once when sealing starts (the first
'overseer serve', 'overseer init' or this command) and waits in
$OVERSEER_HOME/audit-verify.key until you move it elsewhere:

  overseer audit key --out /media/usb/overseer-audit.key

writes it to FILE and erases Overseer's copy (--forget only erases it, once
you have written the key down or scanned its QR code). Then check the log
with 'overseer audit verify --key FILE'. Without flags, this command shows
the seal's state.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			home, err := a.homeDir()
			if err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(home, audit.SealFile)); errors.Is(err, os.ErrNotExist) {
				// First start: sealing is set up by opening the kernel.
				k, err := a.open(ctx)
				if err != nil {
					return err
				}
				setup := k.Sealing
				if cerr := k.Close(); cerr != nil {
					return cerr
				}
				if setup.New && out == "" && !forget {
					a.showNewKey(home, setup)
					return nil
				}
			}
			pending, perr := audit.PendingKey(home)
			switch {
			case out != "":
				if perr != nil {
					return exit(1, errors.New("the verification key is not in Overseer's home any more: it was shown once and "+
						"exported or forgotten (a lost key cannot be recovered)"))
				}
				text := "# Overseer audit verification key (fingerprint " + pending.Fingerprint() + ")\n" +
					"# check the log: overseer audit verify --key THIS-FILE\n" + pending.String() + "\n"
				f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
				if err != nil {
					return err
				}
				_, err = f.WriteString(text)
				if err == nil {
					err = f.Sync()
				}
				if err := errors.Join(err, f.Close()); err != nil {
					return err
				}
				if err := audit.ForgetPendingKey(home); err != nil {
					return fmt.Errorf("the key was written to %s, but Overseer's copy could not be erased: %w", out, err)
				}
				fmt.Fprintf(a.stdout, "verification key %s written to %s; Overseer's copy is erased.\n", pending.Fingerprint(), out)
				fmt.Fprintf(a.stdout, "Keep that file away from this machine, and check the log with: overseer audit verify --key %s\n", out)
				return nil
			case forget:
				if perr != nil {
					return exit(1, errors.New("there is no verification key in Overseer's home"))
				}
				if err := audit.ForgetPendingKey(home); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "Overseer's copy of verification key %s is erased.\n", pending.Fingerprint())
				return nil
			}
			state, err := audit.ReadSealState(filepath.Join(home, audit.SealFile))
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "audit log sealed with key %s; the sealing key is at epoch %d (%s)\n",
				state.Fingerprint, state.Epoch, filepath.Join(home, audit.SealFile))
			if perr == nil {
				fmt.Fprintf(a.stdout, "the verification key still waits in %s: move it out with overseer audit key --out FILE\n",
					filepath.Join(home, audit.KeyFile))
			} else {
				fmt.Fprintln(a.stdout, "the verification key is not on this machine (as it should be)")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the verification key to this new file and erase Overseer's copy")
	cmd.Flags().BoolVar(&forget, "forget", false, "erase Overseer's copy of the verification key")
	return cmd
}

// showNewKey shows a new verification key once: the string and a QR code.
func (a *app) showNewKey(home string, s audit.Setup) {
	w := a.stdout
	fmt.Fprintln(w, "The audit log is now sealed. Its verification key, shown this once:")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "    %s\n", s.Key)
	fmt.Fprintln(w)
	if os.Getenv(NoQREnv) == "" {
		if qr, err := web.TerminalQR(s.Key.String(), isTerminal(w)); err == nil {
			fmt.Fprint(w, qr)
		}
	}
	fmt.Fprintf(w, "  fingerprint %s. Keep the key away from this machine: with it, 'overseer audit verify --key KEY'\n", s.Fingerprint)
	fmt.Fprintln(w, "  proves that no sealed record was altered, removed, reordered or inserted.")
	fmt.Fprintf(w, "  A copy waits in %s until you run 'overseer audit key --out FILE' (or --forget).\n",
		filepath.Join(home, audit.KeyFile))
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
			mw := a.secretMasker(k, w)
			if err := audit.Export(cmd.Context(), k.Store, q, mw); err != nil {
				return err
			}
			if err := mw.Flush(); err != nil {
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
			mw := a.secretMasker(k, a.stdout)
			defer mw.Flush()
			enc := json.NewEncoder(mw)
			print := func(r store.AuditRecord) error {
				if asJSON {
					return enc.Encode(r)
				}
				if _, err := fmt.Fprintln(mw, auditLine(r)); err != nil {
					return err
				}
				return mw.Flush()
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

// secretMasker returns the writer the audit records are printed through.
// Records keep what was asked whole — a command with a token in it, a
// request's headers — and `audit export` and `audit tail` are commands
// an agent may run (they change nothing): under an agent, the secrets the
// firewall's analyser finds are masked line by line, so that the log of
// other sessions' calls is not a way to read their secrets unasked.
// Elsewhere the records are printed as they are.
func (a *app) secretMasker(k *kernel.Kernel, w io.Writer) *lineMasker {
	m := &lineMasker{w: w}
	if ev, under := agentCheck(); under {
		fmt.Fprintf(a.stderr, "overseer: running under %s (%s): secrets in the records are masked\n", ev.Agent, ev.Why)
		m.mask = func(line string) string { return resultscan.Mask(line, k.ScanResult(line).Secrets) }
	}
	return m
}

// lineMasker writes what it is given to w, each whole line passed through
// mask (none: as it is). Flush writes a last unfinished line.
type lineMasker struct {
	w    io.Writer
	mask func(string) string
	buf  []byte
}

func (m *lineMasker) Write(p []byte) (int, error) {
	if m.mask == nil {
		return m.w.Write(p)
	}
	m.buf = append(m.buf, p...)
	for {
		i := bytes.IndexByte(m.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := io.WriteString(m.w, m.mask(string(m.buf[:i+1]))); err != nil {
			return 0, err
		}
		m.buf = m.buf[i+1:]
	}
}

// Flush writes the unfinished line, if any.
func (m *lineMasker) Flush() error {
	if len(m.buf) == 0 || m.mask == nil {
		return nil
	}
	_, err := io.WriteString(m.w, m.mask(string(m.buf)))
	m.buf = m.buf[:0]
	return err
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
