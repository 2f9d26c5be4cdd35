package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/frontend/ingest"
	"github.com/overseer-dev/overseer/internal/frontend/notify"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// IngestEveryEnv overrides how often `audit ingest --follow` rescans (tests).
const IngestEveryEnv = "OVERSEER_INGEST_RESCAN"

func (a *app) auditIngestCmd() *cobra.Command {
	var (
		format string
		follow bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "ingest [PATH...] [--follow]",
		Short: "Audit after the fact: judge what agents did without Overseer in the path, from their transcripts",
		Long: `Read the transcripts of agents that ran without Overseer in the path and judge
every tool call they made with the same firewall (audited mode). Each call is
recorded in the audit log as ingested, with its source file and line; nothing
in a transcript is executed.

Without PATH the agents' own directories are read: ~/.claude/projects
(Claude Code, sub-agents included) and $CODEX_HOME/sessions (Codex, default
~/.codex/sessions). A PATH may be a file or a directory (every *.jsonl below
it). The format is found per file (--format claude-code|codex|jsonl forces
one; jsonl is the generic format of docs/audited-mode.md).

Ingesting again records nothing twice. A call judged block is a violation:
it is listed, sent to the notification channels of notify.yaml, and demotes
the agent one step ('overseer agent show'). File writes the transcript
describes fully can be rolled back ('overseer audit rollback ID').

--follow keeps watching the directories and audits what the agents append
within seconds (Ctrl-C to stop). Lines that cannot be read are reported and
make the exit status 1.`,
		RunE: func(cmd *cobra.Command, paths []string) error {
			ctx := cmd.Context()
			if len(paths) == 0 {
				dirs, err := ingest.DefaultDirs()
				if err != nil {
					return err
				}
				for _, d := range dirs {
					if _, err := os.Stat(d); err == nil || follow {
						paths = append(paths, d)
					}
				}
				if len(paths) == 0 {
					return exit(1, fmt.Errorf("no transcripts found (looked in %s)", strings.Join(dirs, ", ")))
				}
			}
			// Ingesting needs no daemon: the home is made when it is new.
			home, err := a.homeDir()
			if err != nil {
				return err
			}
			a.warnOtherHome(home)
			k, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer k.Close()
			n, err := loadNotifier(k.Home)
			if err != nil {
				return err
			}
			in := &ingest.Ingester{K: k, Format: format}
			in.OnViolation = func(ctx context.Context, f ingest.Finding) {
				if n == nil {
					return
				}
				if err := n.Alert(ctx, violationMessage(f, time.Now())); err != nil {
					fmt.Fprintln(a.stderr, "overseer: notifying the violation:", err)
				}
			}
			if !follow {
				rep, err := in.Paths(ctx, paths)
				if rep != nil {
					a.printIngest(rep, asJSON)
				}
				if err != nil {
					return err
				}
				if len(rep.Problems) > 0 {
					return exit(1, fmt.Errorf("%d line(s) could not be read", len(rep.Problems)))
				}
				return nil
			}
			in.OnProblem = func(ctx context.Context, p ingest.Problem) {
				fmt.Fprintf(a.stderr, "overseer: %s\n", termSafe(p.Error()))
				if n != nil {
					_ = n.Alert(ctx, notify.AlertMessage("ingest_problem", "Overseer: a transcript line could not be read", p.Error(), time.Now()))
				}
			}
			every := 2 * time.Second
			if d, err := time.ParseDuration(os.Getenv(IngestEveryEnv)); err == nil && d > 0 {
				every = d
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(a.stderr, "overseer: following %s\n", strings.Join(paths, ", "))
			return in.Follow(ctx, paths, every, func(r *ingest.Report) {
				r.Problems = nil // reported as they come
				a.printIngest(r, asJSON)
			})
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "force the transcript format: claude-code, codex or jsonl")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep watching and audit what the agents append")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (one object per batch with --follow)")
	return cmd
}

// loadNotifier builds the notification channels of notify.yaml (nil when
// there is none).
func loadNotifier(home string) (*notify.Notifier, error) {
	ncfg, err := notify.Load(filepath.Join(home, notify.ConfigName))
	switch {
	case errors.Is(err, notify.ErrNoConfig):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return notify.New(ncfg, notify.Options{Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "overseer: "+f+"\n", a...) }})
}

// violationMessage is the alarm of a violation found by ingest.
func violationMessage(f ingest.Finding, at time.Time) *notify.Message {
	text := fmt.Sprintf("%s (%s) ran %s without Overseer in the path; judged %s: %s\nsource: %s\naction: %s",
		f.Agent, f.Session, f.Tool, f.Level, f.Summary, f.Source, f.ActionID)
	if d := f.Demoted; d != nil {
		text += fmt.Sprintf("\n%s was demoted from %s to %s", d.Agent, d.From, d.To)
	}
	m := notify.AlertMessage("ingest_violation", "Overseer: "+f.Agent+" did something it must not ("+f.Tool+")", text, at)
	m.ActionID, m.Tool, m.Agent, m.Session, m.Level = f.ActionID, f.Tool, f.Agent, f.Session, f.Level
	return m
}

func (a *app) printIngest(r *ingest.Report, asJSON bool) {
	if asJSON {
		_ = a.printJSON(r)
		for _, p := range r.Problems {
			fmt.Fprintf(a.stderr, "unreadable: %s\n", termSafe(p.Error()))
		}
		return
	}
	fmt.Fprintf(a.stdout, "%d file(s), %d call(s): %d new, %d already ingested; %d result(s)\n", r.Files, r.Calls, r.New, r.Duplicates, r.Results)
	for _, l := range []string{"auto", "notify", "confirm", "approve", "block"} {
		if n := r.Levels[l]; n > 0 {
			fmt.Fprintf(a.stdout, "  %-8s %d\n", l, n)
		}
	}
	for _, v := range r.Violations {
		fmt.Fprintf(a.stdout, "VIOLATION %s %s %s: %s (%s)\n", v.ActionID, termSafe(v.Agent), termSafe(v.Tool), termSafe(v.Summary), termSafe(v.Source))
		if d := v.Demoted; d != nil {
			fmt.Fprintf(a.stdout, "  %s demoted from %s to %s\n", termSafe(d.Agent), d.From, d.To)
		}
	}
	for _, u := range r.Undoable {
		fmt.Fprintf(a.stdout, "can roll back %s: %s\n", u.ActionID, termSafe(u.Path))
	}
	for _, p := range r.Problems {
		fmt.Fprintf(a.stderr, "unreadable: %s\n", termSafe(p.Error()))
	}
}

func (a *app) auditRollbackCmd() *cobra.Command {
	var (
		yes    bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "rollback ACTION_ID [--yes]",
		Short: "Roll back a file write found by 'audit ingest' to its content before the call",
		Long: `Show, and with --yes make, the rollback of a file write an ingested call made:
the file gets back the content it had before the call (a file the call
created is removed). Refused when the file is no longer exactly what the
transcript says the call made it (later work is never overwritten), when it
is a symbolic link, and when the firewall blocks writing that path. The
rollback is recorded in the audit log with who asked.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			k, err := a.openExisting(ctx)
			if err != nil {
				return err
			}
			defer k.Close()
			var plan *kernel.RollbackPlan
			if yes {
				plan, err = k.Rollback(ctx, args[0], whoami(), "cli")
			} else {
				plan, err = k.PlanRollback(ctx, args[0])
			}
			if err != nil {
				return exit(1, err)
			}
			if asJSON {
				return a.printJSON(plan)
			}
			fmt.Fprint(a.stdout, plan.Diff)
			switch {
			case plan.Done && plan.Remove:
				fmt.Fprintf(a.stdout, "removed %s (the call had created it)\n", plan.Path)
			case plan.Done:
				fmt.Fprintf(a.stdout, "restored %s\n", plan.Path)
			default:
				fmt.Fprintf(a.stdout, "not changed: run again with --yes to roll back %s\n", plan.Path)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "make the rollback (without it only the diff is shown)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

// termSafe replaces control characters (terminal escapes among them) in
// text read from a transcript, which an agent may have written, before it
// is printed.
func termSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '\uFFFD'
		}
		return r
	}, s)
}
