package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/frontend/hookcore"
	"github.com/overseer-dev/overseer/internal/frontend/hooks"
)

func init() {
	extraCommands = append(extraCommands, func(a *app) *cobra.Command { return a.initCmd() })
}

// hookTarget is where `overseer init` writes an agent's hook entries.
type hookTarget struct {
	Path  string
	Scope string // "project" or "user"
}

// settingsPath returns the settings file of agent for a project directory
// (project != "") or for the user.
func settingsPath(agent, project string, getenv func(string) string, userHome string) (hookTarget, error) {
	if project != "" {
		abs, err := filepath.Abs(project)
		if err != nil {
			return hookTarget{}, err
		}
		switch agent {
		case hooks.ClaudeCode:
			return hookTarget{filepath.Join(abs, ".claude", "settings.json"), "project"}, nil
		case hooks.Gemini:
			return hookTarget{filepath.Join(abs, ".gemini", "settings.json"), "project"}, nil
		case hooks.Codex:
			return hookTarget{}, errors.New("codex reads hooks from $CODEX_HOME/hooks.json only: use --user (set CODEX_HOME to choose the directory)")
		}
	}
	switch agent {
	case hooks.ClaudeCode:
		return hookTarget{filepath.Join(userHome, ".claude", "settings.json"), "user"}, nil
	case hooks.Gemini:
		return hookTarget{filepath.Join(userHome, ".gemini", "settings.json"), "user"}, nil
	case hooks.Codex:
		dir := getenv("CODEX_HOME")
		if dir == "" {
			dir = filepath.Join(userHome, ".codex")
		}
		return hookTarget{filepath.Join(dir, "hooks.json"), "user"}, nil
	}
	return hookTarget{}, fmt.Errorf("%w %q", hooks.ErrUnknownAgent, agent)
}

func (a *app) initCmd() *cobra.Command {
	var project, confirm string
	var user, uninstall, lean bool
	var maxWait time.Duration
	cmd := &cobra.Command{
		Use:   "init claude-code|codex|gemini [--project DIR | --user] [--uninstall]",
		Short: "Install Overseer's hooks into an agent's settings",
		Long: `Install (or, with --uninstall, remove) the hook entries that make Overseer
the permission layer of an agent:

  claude-code  .claude/settings.json of the project (--project DIR, default: the
               current directory) or ~/.claude/settings.json (--user)
  codex        $CODEX_HOME/hooks.json (default ~/.codex/hooks.json; --user only).
               Codex runs new hooks only after you trust them: start 'codex' once
               and choose "Trust all and continue" on the hooks review screen.
  gemini       .gemini/settings.json of the project or ~/.gemini/settings.json

Other settings and other hooks are kept as they are. Running it again
changes nothing; a file it changes is first copied to
<file>.overseer-backup-<time>. --uninstall removes exactly the entries it
added.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			agent := args[0]
			if !hooks.KnownAgent(agent) {
				return exit(2, fmt.Errorf("%w %q (want claude-code, codex or gemini)", hooks.ErrUnknownAgent, agent))
			}
			if user && project != "" {
				return exit(2, errors.New("--project and --user exclude each other"))
			}
			if !user && project == "" && agent != hooks.Codex {
				project = "."
			}
			if agent == hooks.Codex && project == "" {
				user = true
			}
			uh, err := os.UserHomeDir()
			if err != nil && user {
				return err
			}
			tgt, err := settingsPath(agent, project, os.Getenv, uh)
			if err != nil {
				return exit(2, err)
			}
			now := time.Now()
			if uninstall {
				fc, err := hooks.UninstallFile(tgt.Path, agent, now)
				if err != nil {
					return err
				}
				a.reportChange(fc, "removed Overseer's hooks from", "no Overseer hooks in")
				return nil
			}
			mode := hooks.ConfirmMode(confirm)
			if confirm != "" && mode != hooks.ConfirmHold && mode != hooks.ConfirmAsk {
				return exit(2, fmt.Errorf("--confirm %q: want hold or ask", confirm))
			}
			if mode == hooks.ConfirmAsk && !hooks.CanAsk(agent) {
				return exit(2, fmt.Errorf("--confirm ask is not possible for %s: its hooks run a call they answer with ask", agent))
			}
			if cmd.Flags().Changed("max-wait") && maxWait <= 0 {
				return exit(2, errors.New("--max-wait must be positive"))
			}
			command, err := a.hookCommand(agent, lean)
			if err != nil {
				return err
			}
			fc, err := hooks.InstallFile(tgt.Path, hooks.InstallSpec{Agent: agent, Command: command,
				MaxWait: maxWait, Confirm: mode}, now)
			if err != nil {
				return err
			}
			a.reportChange(fc, "installed Overseer's hooks in", "Overseer's hooks are already installed in")
			if agent == hooks.Codex && fc.Changed {
				fmt.Fprintln(a.stdout, `Codex runs new or changed hooks only once they are trusted: start 'codex' once and
choose "Trust all and continue" on the "Hooks need review" screen.`)
			}
			// The first start also seals the audit log: show its key once.
			if k, err := a.open(cmd.Context()); err != nil {
				fmt.Fprintln(a.stderr, "overseer: opening Overseer's home to seal the audit log:", err)
			} else {
				setup := k.Sealing
				if err := k.Close(); err == nil && setup.New {
					fmt.Fprintln(a.stdout)
					a.showNewKey(k.Home, setup)
					fmt.Fprintln(a.stdout)
				}
			}
			fmt.Fprintln(a.stdout, "Start the daemon so calls that need a person can wait for one: overseer serve")
			return nil
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "install into this project directory's settings (default: the current directory)")
	cmd.Flags().BoolVar(&user, "user", false, "install into the user's settings")
	cmd.Flags().BoolVar(&uninstall, "uninstall", false, "remove the hooks this command installed")
	cmd.Flags().BoolVar(&lean, "lean", true, "install the lean hook entry (overseer-hook next to this binary) when it is there; false: this binary")
	cmd.Flags().StringVar(&confirm, "confirm", "", "who answers a confirm verdict: hold (default) or ask (the agent's own prompt; Claude Code and Gemini CLI)")
	cmd.Flags().DurationVar(&maxWait, "max-wait", hooks.DefaultMaxWait, "how long the hook holds a call for a person's answer")
	return cmd
}

// hookCommand is the command line the agent runs: this binary, by its
// absolute path (so the hook does not depend on the agent's PATH: a
// missing command would be a non-blocking error, and the call would run),
// with the global flags this invocation was given.
//
// With lean, the command is the lean hook entry next to this binary
// (leanHook) when there is one fit to run: it answers calls through the
// daemon as fast as a bare program starts, and hands the rest to this
// binary.
func (a *app) hookCommand(agent string, lean bool) (string, error) {
	exe, err := executable()
	if err != nil {
		return "", fmt.Errorf("finding this program's path: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	c := hooks.ShellQuote(exe)
	if lean {
		if l, err := leanHook(exe); err == nil {
			c = hooks.ShellQuote(l)
		} else if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(a.stderr, "overseer: not installing the lean hook entry: %v; the hook runs %s\n", err, exe)
		}
	}
	if a.home != "" {
		h, err := filepath.Abs(a.home)
		if err != nil {
			return "", err
		}
		c += " --home " + hooks.ShellQuote(h)
	}
	if a.policy != "" {
		p, err := filepath.Abs(a.policy)
		if err != nil {
			return "", err
		}
		c += " --policy " + hooks.ShellQuote(p)
	}
	return c + " hook " + agent, nil
}

func (a *app) reportChange(fc hooks.FileChange, did, nothing string) {
	if !fc.Changed {
		fmt.Fprintf(a.stdout, "%s %s (nothing changed)\n", nothing, fc.Path)
		return
	}
	fmt.Fprintf(a.stdout, "%s %s\n", did, fc.Path)
	if fc.Backup != "" {
		fmt.Fprintf(a.stdout, "  backup of the previous file: %s\n", fc.Backup)
	}
}

// leanHook returns the lean hook entry next to exe (hookcore.LeanName) if it
// is fit to be the agents' hook: a regular executable file, owned by the
// owner of exe, writable by nobody else, and built from the same source as
// this binary (its BuildID is this one's: a lean hook left from another
// version could speak another API). fs.ErrNotExist: there is none.
func leanHook(exe string) (string, error) {
	p := filepath.Join(filepath.Dir(exe), hookcore.LeanName)
	st, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("%s is writable by others than its owner", p)
	}
	if est, err := os.Stat(exe); err != nil || !sameOwner(st, est) {
		return "", fmt.Errorf("%s is not owned by the owner of %s", p, exe)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, hookcore.BuildFlag).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v", p, hookcore.BuildFlag, err)
	}
	if got, want := strings.TrimSpace(string(out)), hookcore.BuildID(); got != want {
		return "", fmt.Errorf("%s was built from other source (%q, this binary %q)", p, got, want)
	}
	return p, nil
}

// executable returns this program's path; tests replace it.
var executable = os.Executable
