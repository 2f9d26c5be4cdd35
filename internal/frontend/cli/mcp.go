package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/frontend/mcpgw"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/mcppin"
	"github.com/overseer-dev/overseer/internal/proc"
	"github.com/overseer-dev/overseer/internal/store"
)

func init() {
	extraCommands = append(extraCommands, func(a *app) *cobra.Command { return a.mcpCmd() })
	mounts = append(mounts, mountMCP)
}

// mcpStartup caps how long the gateway waits for its upstream servers'
// first connection before it serves a client.
const mcpStartup = 30 * time.Second

func (a *app) mcpCmd() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the MCP gateway over stdio: every tool call of your MCP servers through the firewall",
		Long: `Serve Overseer's MCP gateway over stdio, for MCP clients (Claude Code, Claude
Desktop, Cursor, …) to launch as their one MCP server. The real servers are
configured in $OVERSEER_HOME/mcp.yaml (see --config); their tools are offered
as server__tool. Every call is judged, audited, and put to a person when its
level calls for it: answer with "overseer approve ID" / "overseer deny ID", or
in the client itself where it supports MCP elicitation.

A call that waits for a person is held for a while (hold in mcp.yaml), then
answered "pending approval ID"; the identical retry (same tool and arguments,
from the same client) picks up the answer — also after the gateway restarts,
as long as the client that launched it still runs. A call the client cancels
withdraws its request; so does the client's exit (the daemon notices).

The daemon (overseer serve) serves the same gateway over streamable HTTP at /mcp.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.serveMCP(ctx, config, &mcp.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}})
		},
	}
	cmd.PersistentFlags().StringVar(&config, "config", "", "the gateway's configuration (default $OVERSEER_HOME/mcp.yaml)")
	cmd.AddCommand(a.mcpCheckCmd(&config), a.mcpPinsCmd(), a.mcpAcceptCmd())
	return cmd
}

// stdioClient names the client that launched this stdio gateway: its
// session (the same for every gateway the client starts in this directory
// with this configuration, so that a restarted gateway picks up the
// requests its predecessor left open) and its process (the asker of those
// requests: they are withdrawn once the client is gone). A gateway whose
// parent is unknown, or init, gets neither.
func stdioClient(cwd, config string) (string, *store.Asker) {
	p, ok := proc.Parent()
	if !ok || p.PID <= 1 {
		return "", nil
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{p.Host, strconv.Itoa(p.PID), p.Start, cwd, config}, "\x00")))
	return "mcp-" + hex.EncodeToString(sum[:8]), &store.Asker{Kind: "mcp", PID: p.PID, Start: p.Start, Host: p.Host}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpConfig loads the gateway's configuration.
func (a *app) mcpConfig(file string) (*mcpgw.Config, error) {
	if file == "" {
		home, err := a.homeDir()
		if err != nil {
			return nil, err
		}
		file = filepath.Join(home, mcpgw.ConfigName)
	}
	cfg, err := mcpgw.LoadConfig(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: write it to list your MCP servers (see docs/integrations/mcp.md)", file)
	}
	return cfg, err
}

// openMCP opens the kernel with the mcp guard and starts the gateway.
// stdio says the gateway serves the client that launched this process.
func (a *app) openMCP(ctx context.Context, config string, stdio bool) (*kernel.Kernel, *mcpgw.Gateway, error) {
	cfg, err := a.mcpConfig(config)
	if err != nil {
		return nil, nil, err
	}
	home, err := a.homeDir()
	if err != nil {
		return nil, nil, err
	}
	k, err := kernel.Open(ctx, kernel.Config{Home: home, PolicyFile: a.policy, Guards: mcpgw.KernelGuards})
	if err != nil {
		return nil, nil, err
	}
	cwd, _ := os.Getwd()
	opts := mcpgw.Options{Kernel: k, Config: cfg, Cwd: cwd, Log: a.stderr, Version: Version}
	if stdio {
		opts.Session, opts.Client = stdioClient(cwd, config)
	}
	gw, err := mcpgw.New(opts)
	if err != nil {
		k.Close()
		return nil, nil, err
	}
	return k, gw, nil
}

// mcpGCPercent is the stdio gateway's garbage collector target, unless
// GOGC says otherwise: it keeps little live memory, and collecting less
// often takes a tenth of a millisecond off each call on a busy machine.
const mcpGCPercent = 400

func (a *app) serveMCP(ctx context.Context, config string, t mcp.Transport) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(mcpGCPercent)
	}
	k, gw, err := a.openMCP(ctx, config, true)
	if err != nil {
		return err
	}
	defer k.Close()
	defer gw.Close()
	wctx, cancel := context.WithTimeout(ctx, mcpStartup)
	_ = gw.WaitReady(wctx) // servers still starting are listed when they come up
	cancel()
	for _, h := range gw.Health() {
		if h.State != mcpgw.StateHealthy {
			fmt.Fprintf(a.stderr, "overseer mcp: upstream %s is %s: %s (retrying)\n", h.Name, h.State, h.Error)
		}
	}
	if err := gw.Run(ctx, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

func (a *app) mcpCheckCmd(config *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Start every configured MCP server once and report its health and tools",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, gw, err := a.openMCP(cmd.Context(), *config, false)
			if err != nil {
				return err
			}
			defer k.Close()
			defer gw.Close()
			wctx, cancel := context.WithTimeout(cmd.Context(), mcpStartup)
			_ = gw.WaitReady(wctx)
			cancel()
			health, tools := gw.Health(), gw.Tools()
			if asJSON {
				if err := a.printJSON(map[string]any{"upstreams": health, "tools": tools}); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SERVER\tSTATE\tTOOLS\tERROR")
				for _, h := range health {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", h.Name, h.State, h.Tools, h.Error)
				}
				tw.Flush()
				fmt.Fprintf(a.stdout, "\n%d tools offered:\n", len(tools))
				for _, t := range tools {
					fmt.Fprintf(a.stdout, "  %s\n", t)
				}
			}
			for _, h := range health {
				if h.State != mcpgw.StateHealthy {
					return exit(1, fmt.Errorf("upstream %s is %s", h.Name, h.State))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {\"upstreams\": [...], \"tools\": [...]} as JSON")
	return cmd
}

// mountMCP serves the gateway at /mcp on the daemon when
// $OVERSEER_HOME/mcp.yaml exists. A broken configuration does not stop the
// daemon (people still answer approvals through it); /mcp then answers
// with the error, and no tool runs.
func mountMCP(k *kernel.Kernel, api *httpapi.Server) error {
	file := filepath.Join(k.Home, mcpgw.ConfigName)
	cfg, err := mcpgw.LoadConfig(file)
	if errors.Is(err, fs.ErrNotExist) {
		api.Router().HandleFunc("/mcp", httpapi.AccessAgent, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "the MCP gateway has no servers: write "+file, http.StatusNotFound)
		})
		return nil
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "overseer: the MCP gateway is off:", err)
		msg := err.Error()
		api.Router().HandleFunc("/mcp", httpapi.AccessAgent, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "the MCP gateway's configuration is invalid: "+msg, http.StatusServiceUnavailable)
		})
		return nil
	}
	gw, err := mcpgw.New(mcpgw.Options{Kernel: k, Config: cfg, Log: os.Stderr, Version: Version})
	if err != nil {
		return err
	}
	// The gateway lives as long as the daemon: it stops its upstream
	// servers on the signals that stop the daemon.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
		gw.Close()
	}()
	// Agents' MCP sessions are under the submission quotas, as agent "mcp"
	// with the MCP session as theirs.
	api.Router().Handle("/mcp", httpapi.AccessAgent, api.Limited("mcp",
		func(r *http.Request) string { return r.Header.Get("Mcp-Session-Id") }, gw.HTTPHandler()))
	return nil
}

func (a *app) mcpPinsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "List the pinned MCP tool definitions and the changes waiting for a person",
		Long: `List the definitions of upstream MCP tools the gateway has pinned. A tool whose
definition changed since it was accepted, or whose definition holds
instructions aimed at the model, is withheld from clients until a person
accepts it: such tools are listed with the diff and the findings.
Accept one with "overseer mcp accept SERVER TOOL" or on the console.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer k.Close()
			pins, err := k.Pins.List(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(map[string]any{"pins": pins})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tKIND\tNAME\tSTATE\tACCEPTED BY")
			for _, p := range pins {
				state := "pinned"
				switch {
				case p.Pending != nil:
					state = "WITHHELD (" + p.Pending.Reason + ")"
				case p.Flagged != nil:
					state = "pinned, flagged"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Server, p.Kind, p.Tool, state, p.AcceptedBy)
			}
			tw.Flush()
			for _, p := range pins {
				if p.Pending == nil {
					continue
				}
				fmt.Fprintf(a.stdout, "\n%s %s %s: withheld (%s), hash %s\n", p.Server, p.Kind, p.Tool, p.Pending.Reason, p.Pending.Hash)
				if p.Pending.Findings != nil {
					fmt.Fprintf(a.stdout, "  findings: %s\n", p.Pending.Findings.Summary())
					for _, f := range p.Pending.Findings.Findings {
						fmt.Fprintf(a.stdout, "    %s (%s): %q\n", f.Rule, f.Class, f.Excerpt)
					}
				}
				if p.Pending.Diff != "" {
					fmt.Fprintf(a.stdout, "%s\n", indent(p.Pending.Diff, "  "))
				} else {
					fmt.Fprintf(a.stdout, "%s\n", indent(mcppin.Pretty(p.Pending.Definition), "  "))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {\"pins\": [...]} as JSON")
	return cmd
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}

func (a *app) mcpAcceptCmd() *cobra.Command {
	var hash, who, kindName string
	cmd := &cobra.Command{
		Use:   "accept SERVER TOOL",
		Short: "Accept an MCP tool's changed or flagged definition, so the gateway offers it again",
		Long: `Accept the pending definition of an MCP tool that the gateway withholds
(see "overseer mcp pins" for the diff and the findings). With --hash, the
definition is accepted only if it is still the one with that hash (what you
looked at). Prompts, resources and resource templates are pinned too:
accept one with --kind prompt|resource|resource_template, naming the prompt,
the resource's URI or the template as TOOL. Only a person may accept: an
agent that runs this command is blocked by Overseer. The acceptance is
audited.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer k.Close()
			if who == "" {
				who = whoami()
			}
			kind, err := mcppin.ParseKind(kindName)
			if err != nil {
				return err
			}
			pin, err := k.AcceptMCP(cmd.Context(), args[0], kind, args[1], hash, who, "cli")
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "accepted %s %s (hash %s); running gateways offer it within a few seconds\n", args[0], args[1], pin.Hash)
			return nil
		},
	}
	cmd.Flags().StringVar(&hash, "hash", "", "accept only the pending definition with this hash (from overseer mcp pins)")
	cmd.Flags().StringVar(&who, "who", "", "who accepts (default: the current user)")
	cmd.Flags().StringVar(&kindName, "kind", "tool", "what is accepted: tool, prompt, resource or resource_template")
	return cmd
}
