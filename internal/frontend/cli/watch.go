package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/frontend/hooks"
	"github.com/overseer-dev/overseer/internal/frontend/watch"
)

func init() {
	extraCommands = append(extraCommands, func(a *app) *cobra.Command { return a.watchCmd() })
}

func (a *app) watchCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "watch",
		Short: "Answer coding agents' permission prompts in terminal panes as the firewall rules",
	}
	var session, socketName, socketPath string
	var panes []string
	var interval, maxWait time.Duration
	tmux := &cobra.Command{
		Use:   "tmux",
		Short: "Watch tmux panes for agents' permission prompts",
		Long: `Watch the panes of a tmux server (every session, or --session) for the
permission prompts of Claude Code, Codex CLI and Gemini CLI, and generic
confirmations ((y/n), (yes/no), [Y/n], "Proceed with this plan?").

For each prompt that stays on screen, at the bottom of its pane, for two
captures, the watcher reads what it asks about (the command, the file, the
tool), has Overseer judge it as it judges a hook's call — through the daemon
when one runs — and types the answer: yes for auto and notify (the option
that allows once), no for block; confirm and approve go to a person
('overseer approve|deny', the console, a phone link) and the person's answer
is typed. A prompt the watcher cannot read whole, or that needs a person when
no daemon runs, is left for the person at the terminal. Every answer is in
the audit log.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := a.homeDir()
			if err != nil {
				return err
			}
			set, err := watch.Builtin()
			if err != nil {
				return err
			}
			t := &watch.Tmux{}
			switch {
			case socketPath != "":
				t.Server = []string{"-S", socketPath}
			case socketName != "":
				t.Server = []string{"-L", socketName}
			}
			b := hooks.NewAuto(home, a.open)
			defer b.Close()
			pub := &watch.Publisher{Home: home, Server: strings.Join(t.Server, " ")}
			defer pub.Close()
			w := &watch.Watcher{Tmux: t, Session: session, Only: panes, Interval: interval, Set: set,
				Judge: &watch.HookJudge{B: b, MaxWait: maxWait},
				Publish: func(v []watch.PaneView) {
					if err := pub.Publish(v, time.Now()); err != nil {
						fmt.Fprintf(a.stderr, "overseer watch: publishing the panes view: %v\n", err)
					}
				},
				Logf: func(format string, args ...any) {
					fmt.Fprintf(a.stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
				}}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if _, err := t.Panes(ctx, session); err != nil {
				return fmt.Errorf("cannot read the tmux server's panes: %w", err)
			}
			fmt.Fprintf(a.stderr, "overseer watch: watching tmux panes every %s (Ctrl-C to stop)\n", interval)
			return w.Run(ctx)
		},
	}
	tmux.Flags().StringVar(&session, "session", "", "watch only this tmux session")
	tmux.Flags().StringSliceVar(&panes, "pane", nil, "watch only these panes (%id or session:window.pane)")
	tmux.Flags().DurationVar(&interval, "interval", time.Second, "time between captures")
	tmux.Flags().DurationVar(&maxWait, "max-wait", 30*time.Minute, "how long to wait for a person's answer before leaving the prompt on screen")
	tmux.Flags().StringVarP(&socketName, "socket-name", "L", "", "tmux server socket name (tmux -L)")
	tmux.Flags().StringVarP(&socketPath, "socket-path", "S", "", "tmux server socket path (tmux -S)")
	root.AddCommand(tmux)

	var asJSON bool
	panesCmd := &cobra.Command{
		Use:   "panes",
		Short: "Show the panes the running watchers watch: agent, last prompt, state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := a.homeDir()
			if err != nil {
				return err
			}
			sets, err := watch.ReadPanes(home, time.Now())
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(sets)
			}
			_, err = io.WriteString(a.stdout, watch.FormatPanes(sets, time.Now()))
			return err
		},
	}
	panesCmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	root.AddCommand(panesCmd)
	return root
}
