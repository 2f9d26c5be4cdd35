// Package cli is Overseer's command line: `overseer serve`, `eval`,
// `approvals`, `approve`, `deny`, `policy`, `audit` and the rest. Each
// command is a thin layer over the kernel or, where a daemon runs, its API.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/kernel"
)

// Version is set at build time (-ldflags "-X …/cli.Version=v1.2.3").
var Version = "dev"

// exitError carries an exit status through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exit returns an error that makes the process exit with code, printing err.
func exit(code int, err error) error { return &exitError{code: code, err: err} }

// app holds the global flags.
type app struct {
	home   string
	policy string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// Main runs the CLI with args and returns the process exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	var root *cobra.Command
	if isHook(args) {
		// An agent's hook runs on every tool call: it builds its own
		// command only, not the whole tree.
		root = a.baseCmd()
		root.AddCommand(a.hookCmd())
	} else {
		root = a.rootCmd()
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(stderr, "overseer:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "overseer:", err)
	return 1
}

// isHook reports whether args run `overseer hook`: the first argument that
// is neither a global flag nor its value is "hook".
func isHook(args []string) bool {
	for i := 0; i < len(args); i++ {
		switch v := args[i]; {
		case v == "--home" || v == "--policy":
			i++
		case strings.HasPrefix(v, "--home=") || strings.HasPrefix(v, "--policy="):
		default:
			return v == "hook"
		}
	}
	return false
}

func (a *app) rootCmd() *cobra.Command {
	root := a.baseCmd()
	root.AddCommand(
		a.serveCmd(),
		a.evalCmd(),
		a.approvalsCmd(),
		a.answerCmd("approve"),
		a.answerCmd("deny"),
		a.policyCmd(),
		a.auditCmd(),
		a.versionCmd(),
	)
	for _, c := range extraCommands {
		root.AddCommand(c(a))
	}
	a.guardAnswering(root) // agentcheck.go: answering commands refuse to run under an agent
	return root
}

// baseCmd is the root command with the global flags and no subcommand.
func (a *app) baseCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "overseer",
		Short: "A human-decision firewall for AI agents",
		Long: `Overseer sits between what an AI agent decides to do and the real world.
Every action is judged (auto, notify, confirm, approve or block), put to a
person when its level calls for it, and recorded in a tamper-evident log.

Data lives in $OVERSEER_HOME (default ~/.overseer).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&a.home, "home", "", "Overseer's data directory (default $OVERSEER_HOME or ~/.overseer)")
	root.PersistentFlags().StringVar(&a.policy, "policy", "", "admin policy file (default $OVERSEER_HOME/policy.yaml if present, else the built-in policy)")
	return root
}

// extraCommands lets other files of front ends add commands (hooks, mcp, tui).
var extraCommands []func(*app) *cobra.Command

func (a *app) homeDir() (string, error) {
	if a.home != "" {
		return a.home, nil
	}
	return kernel.DefaultHome()
}

// open opens the kernel in this process.
func (a *app) open(ctx context.Context) (*kernel.Kernel, error) {
	home, err := a.homeDir()
	if err != nil {
		return nil, err
	}
	clk, err := testClock() // nil but in a test build
	if err != nil {
		return nil, err
	}
	k, err := kernel.Open(ctx, kernel.Config{Home: home, PolicyFile: a.policy, Clock: clk})
	if err != nil {
		return nil, err
	}
	return k, nil
}

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// whoami names the person answering through the CLI.
func whoami() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "cli"
}

func (a *app) versionCmd() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print Overseer's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, _ := debug.ReadBuildInfo()
			fmt.Fprintf(a.stdout, "overseer %s\n", versionOf(Version, bi))
			if verbose && bi != nil {
				fmt.Fprintf(a.stdout, "go: %s\n", bi.GoVersion)
				for _, s := range bi.Settings {
					switch s.Key {
					case "vcs.revision", "vcs.time", "vcs.modified", "CGO_ENABLED", "GOOS", "GOARCH":
						fmt.Fprintf(a.stdout, "%s: %s\n", s.Key, s.Value)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also print the Go version and the build's settings")
	return cmd
}

// versionOf is the version stamped into this binary: the one given at link
// time (-ldflags "-X …/cli.Version=v1.2.3"), else the module's version
// (`go install …@v1.2.3`, or the pseudo-version Go derives from the
// repository's commit), else the commit itself (vcs.revision, "-dirty" when
// the tree had changes), else "devel" (built without version control
// information: -buildvcs=false, or outside a repository).
func versionOf(ldflags string, bi *debug.BuildInfo) string {
	if ldflags != "" && ldflags != "dev" {
		return ldflags
	}
	if bi == nil {
		return "devel"
	}
	v := bi.Main.Version
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if v != "" && v != "(devel)" {
		if dirty && !strings.HasSuffix(v, "+dirty") {
			v += "+dirty"
		}
		return v
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "-dirty"
		}
		return rev
	}
	return "devel"
}
