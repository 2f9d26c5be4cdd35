package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/frontend/tui"
)

func init() {
	extraCommands = append(extraCommands, func(a *app) *cobra.Command { return a.tuiCmd() })
}

func (a *app) tuiCmd() *cobra.Command {
	var who string
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "tui",
		Short: "Answer waiting actions in a terminal UI (approvals queue, live audit tail)",
		Long: `Open the terminal UI: the actions waiting for a person, with their previews,
answered from the keyboard, and a live tail of the audit log. It talks to the
running daemon (start one with 'overseer serve'), so it works over SSH too.

Keys: j/k move · a approve · d deny (type a reason, Enter sends) · x abort ·
r remember (once → session → rule) · ? help · q quit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
			defer stop()
			home, err := a.homeDir()
			if err != nil {
				return err
			}
			c, err := client.Discover(ctx, home)
			if err != nil {
				return err
			}
			if c.Token == "" {
				return fmt.Errorf("cannot read the daemon token in %s: the terminal UI needs it to answer", home)
			}
			if who == "" {
				who = whoami()
			}
			return tui.Run(ctx, tui.ClientAPI{C: c}, tui.Options{Who: who, Poll: poll, Title: c.Base, Home: userHome()},
				teaIO(a)...)
		},
	}
	cmd.Flags().StringVar(&who, "who", "", "who answers (default: your user name)")
	cmd.Flags().DurationVar(&poll, "poll", time.Second, "how often to re-read the queue and the audit log")
	return cmd
}

// teaIO runs the program on the app's streams when they are not the
// process's own (tests).
func teaIO(a *app) []tui.ProgramOption {
	var opts []tui.ProgramOption
	if f, ok := a.stdin.(*os.File); !ok || f != os.Stdin {
		opts = append(opts, tui.WithInput(a.stdin))
	}
	if f, ok := a.stdout.(*os.File); !ok || f != os.Stdout {
		opts = append(opts, tui.WithOutput(a.stdout))
	}
	return opts
}

// userHome is the person's home directory, or "" when it cannot be told.
func userHome() string {
	h, _ := os.UserHomeDir()
	return h
}
