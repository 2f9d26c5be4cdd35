package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/frontend/hooks"
	"github.com/overseer-dev/overseer/internal/guard/resultscan"
	"github.com/overseer-dev/overseer/internal/kernel"
)

func init() {
	extraCommands = append(extraCommands, func(a *app) *cobra.Command { return a.hookCmd() })
}

// errDenied makes the process exit with status 2 without printing more:
// the reason is already on standard error.
var errDenied = errors.New("")

func (a *app) hookCmd() *cobra.Command {
	var confirm string
	var maxWait time.Duration
	cmd := &cobra.Command{
		Use:   "hook claude-code|codex|gemini",
		Short: "Judge an agent's tool call (run by the agent's hook system)",
		Long: `Run by Claude Code, Codex CLI or Gemini CLI before and after each tool call
(install it with 'overseer init <agent>'). It reads the hook event as JSON on
standard input, has Overseer judge the call — through the daemon when one
runs, else in this process against the same database — and answers in the
agent's format. A call that needs a person is held until one answers
('overseer approve ID'), at most --max-wait. While it waits, the daemon knows
this process as the request's asker: when the hook gives up (the wait runs
out, it is interrupted or killed) the request is withdrawn — it leaves the
queue, recorded as withdrawn, not as a refusal. If the daemon restarts
meanwhile, the hook finds it again and keeps waiting.

Every failure denies the call: the exit status is 0 (with the answer on
standard output) or 2 (with the reason on standard error), never another.

Settings in $OVERSEER_HOME/hooks.yaml (flags win):
  confirm: hold        # or ask: hand 'confirm' to the agent's own prompt (not Codex)
  max_wait: 10m
  tools:               # extend the tool table: agent (or "*") -> tool -> mapping
    claude-code:
      Deploy: {kind: shell}`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			defer func() {
				if p := recover(); p != nil {
					fmt.Fprintf(a.stderr, "Overseer: the hook failed (panic: %v), so the call is denied\n", p)
					err = exit(2, errDenied)
				}
			}()
			leanRuntime()
			set := hookFlags{confirm: confirm, confirmSet: cmd.Flags().Changed("confirm"),
				maxWait: maxWait, maxWaitSet: cmd.Flags().Changed("max-wait")}
			// An agent that is interrupted stops its hook with a signal: the
			// hook then withdraws the request it holds before it exits.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if code := a.runHook(ctx, args, set); code != 0 {
				return exit(2, errDenied)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&confirm, "confirm", "", "who answers a confirm verdict: hold (a person through Overseer) or ask (the agent's own prompt; not for Codex)")
	cmd.Flags().DurationVar(&maxWait, "max-wait", 0, "how long to hold a call for a person's answer (default 10m, or max_wait in hooks.yaml)")
	// A flag the hook does not know must not turn into exit status 1, which
	// the agents treat as "run the call anyway".
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		fmt.Fprintf(a.stderr, "Overseer: the hook was called wrongly (%v), so the call is denied\n", err)
		return exit(2, errDenied)
	})
	return cmd
}

// hookHeapLimit is the heap size at which a hook process collects garbage.
const hookHeapLimit = 256 << 20

// leanRuntime turns the garbage collector off for the hook process, bounded by
// hookHeapLimit (a soft limit: the collector runs when the heap reaches
// it). A hook lives for one call and allocates a few megabytes: collecting
// them is a large share of its time, and the memory is returned when it
// exits. GOGC or GOMEMLIMIT in the environment win.
//
// It also runs the hook's goroutines on one processor: the hook's work is
// one call, done in sequence (its goroutines hand work to each other and
// wait), and with more processors the runtime's idle ones spin looking for
// work at every hand-over — about a tenth of the process's CPU time. A
// blocking system call (a sync) still lets the others run. GOMAXPROCS in
// the environment wins.
func leanRuntime() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(hookHeapLimit)
	debug.SetGCPercent(-1)
}

type hookFlags struct {
	confirm    string
	confirmSet bool
	maxWait    time.Duration
	maxWaitSet bool
}

// runHook builds the hook runner and runs it; it returns 0 or 2.
func (a *app) runHook(ctx context.Context, args []string, f hookFlags) int {
	fail := func(msg string) int {
		r := hooks.Failure(msg)
		_, _ = io.WriteString(a.stderr, r.Stderr)
		return r.Code
	}
	if len(args) != 1 || !hooks.KnownAgent(args[0]) {
		return fail(fmt.Sprintf("usage: overseer hook claude-code|codex|gemini (got %q), so the call is denied", args))
	}
	home, err := a.homeDir()
	if err != nil {
		return fail(err.Error() + ", so the call is denied")
	}
	cfg, cfgErr := hooks.LoadConfig(home)
	r := &hooks.Runner{Agent: args[0], Home: home, ConfigErr: cfgErr,
		Confirm: cfg.Confirm, MaxWait: time.Duration(cfg.MaxWait)}
	if f.confirmSet {
		switch m := hooks.ConfirmMode(f.confirm); m {
		case hooks.ConfirmHold, hooks.ConfirmAsk:
			r.Confirm = m
		default:
			r.ConfigErr = fmt.Errorf("%w: --confirm %q (want hold or ask)", hooks.ErrConfig, f.confirm)
		}
	}
	if f.maxWaitSet {
		if f.maxWait <= 0 {
			r.ConfigErr = fmt.Errorf("%w: --max-wait must be positive", hooks.ErrConfig)
		}
		r.MaxWait = f.maxWait
	}
	if r.Tools, err = hooks.NewTable(cfg.Tools); err != nil && r.ConfigErr == nil {
		r.ConfigErr = err
	}
	// What results are scanned for and what a hit does follow the admin
	// policy's guards.results; a policy that cannot be read leaves the
	// defaults (warn the model), which is also what a pre event then does
	// not rely on: its judgement is the kernel's. Read only for a post
	// event: compiling the policy is most of a hook's start-up.
	r.ResultsFrom = func() *resultscan.Scanner {
		if pol, _, err := kernel.LoadPolicy(home, ""); err == nil {
			if s, err := resultscan.FromPolicy(pol, nil); err == nil {
				return s
			}
		}
		return nil
	}
	r.Connect = func(ctx context.Context) (hooks.Backend, func(), error) {
		b := hooks.NewAuto(home, a.open)
		return b, b.Close, nil
	}
	return r.Run(ctx, a.stdin, a.stdout, a.stderr)
}
