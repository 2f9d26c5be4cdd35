package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// Paused agents: `overseer pause-agent`, `overseer resume-agent` and
// `overseer paused` (the list). They go through the daemon when one runs
// for this home, else to the database directly; each change is an audit
// record naming who made it.

func init() {
	extraCommands = append(extraCommands,
		func(a *app) *cobra.Command { return a.pauseAgentCmd() },
		func(a *app) *cobra.Command { return a.resumeAgentCmd() },
		func(a *app) *cobra.Command { return a.pausedCmd() })
}

// pauseBackend is the daemon or the kernel on the database.
type pauseBackend trustBackend

func (a *app) pauses(ctx context.Context) (*pauseBackend, func(), error) {
	b, done, err := a.trust(ctx)
	return (*pauseBackend)(b), done, err
}

func (b *pauseBackend) pause(ctx context.Context, agent, reason, who string) error {
	if b.c != nil {
		return b.c.PauseAgent(ctx, agent, reason, who)
	}
	return b.k.PauseAgent(ctx, agent, reason, who)
}

func (b *pauseBackend) resume(ctx context.Context, agent, who string) error {
	if b.c != nil {
		return b.c.ResumeAgent(ctx, agent, who)
	}
	return b.k.ResumeAgent(ctx, agent, who)
}

func (b *pauseBackend) list(ctx context.Context) ([]store.AgentPause, error) {
	if b.c != nil {
		return b.c.PausedAgents(ctx)
	}
	return b.k.PausedAgents(ctx)
}

func (a *app) pauseAgentCmd() *cobra.Command {
	var reason, who string
	cmd := &cobra.Command{
		Use:   "pause-agent AGENT",
		Short: "Pause an agent: every call it makes is refused until you resume it",
		Long: `Pause an agent ("claude-code", "codex", "gemini", "overseer" for the own loop, the name an MCP
client or API caller gives; "*" for every agent). Each of its calls is refused with the reason
and how to resume it; Claude Code and Gemini CLI are told to stop their task, the own loop
pauses its task with a checkpoint. Resume with: overseer resume-agent AGENT`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, done, err := a.pauses(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			if who == "" {
				who = whoami()
			}
			if err := b.pause(cmd.Context(), args[0], reason, who); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Paused %s. Resume with: overseer resume-agent %s\n", args[0], args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (told to the agent with each refusal)")
	cmd.Flags().StringVar(&who, "who", "", "who pauses it (default: your user name)")
	return cmd
}

func (a *app) resumeAgentCmd() *cobra.Command {
	var who string
	cmd := &cobra.Command{
		Use:   "resume-agent AGENT",
		Short: "Resume a paused agent (paused by a person, a rate limit or a budget cap)",
		Long: `Resume a paused agent: its calls are judged as usual again. A task of the own loop paused with
it is resumed separately: overseer resume TASK. List the paused agents with: overseer paused`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, done, err := a.pauses(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			if who == "" {
				who = whoami()
			}
			err = b.resume(cmd.Context(), args[0], who)
			var api *client.APIError
			if errors.Is(err, kernel.ErrNotPaused) || errors.As(err, &api) && api.Status == 404 {
				return exit(1, fmt.Errorf("%s is not paused (list the paused agents with `overseer paused`)", args[0]))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Resumed %s.\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&who, "who", "", "who resumes it (default: your user name)")
	return cmd
}

func (a *app) pausedCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "paused",
		Short: "List the paused agents: why, by whom, since when",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, done, err := a.pauses(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			list, err := b.list(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []store.AgentPause{}
				}
				return a.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "No agent is paused.")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tSINCE\tBY\tREASON")
			for _, p := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Agent, p.At.Local().Format(time.DateTime), p.By, p.Reason)
			}
			tw.Flush()
			fmt.Fprintln(a.stdout, "Resume with: overseer resume-agent AGENT")
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
