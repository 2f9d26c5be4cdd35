// Command overseer-hook is the lean entry of Overseer's agent hooks: the
// command `overseer init` installs into Claude Code, Codex CLI and Gemini
// CLI when it sits next to the `overseer` binary. It answers a pre-call
// hook event through the running daemon without the judging code of the
// full binary, so that it starts about as fast as a bare Go program, and
// hands every other case (no daemon, a post-call event, a command line or
// configuration it does not take as is) to `overseer hook` next to it,
// with the same arguments and event. See package hookcore.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/overseer-dev/overseer/internal/frontend/hookcore"
	"github.com/overseer-dev/overseer/internal/guard/egress"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == hookcore.BuildFlag {
		fmt.Println(hookcore.BuildID())
		return
	}
	// A hook lives for one call and allocates little: no collection.
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
		debug.SetGCPercent(-1)
	}
	// An agent that is interrupted stops its hook with a signal: the hook
	// then withdraws the request it holds before it exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	l := &hookcore.Lean{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Environ: os.Environ, Fingerprint: egress.EnvFingerprints,
		Handoff: func(args []string, event []byte) error {
			stop()
			return hookcore.ExecFull(fullPath())(args, event)
		}}
	// The signals stay caught until the process ends (stopping them would
	// cost a round trip to the runtime's signal thread for each).
	os.Exit(l.Run(ctx))
}

// fullPath is the full binary next to this one (symbolic links resolved),
// looked up only when a call is handed to it.
func fullPath() string {
	exe, err := os.Executable()
	if err != nil {
		return hookcore.FullName
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return filepath.Join(filepath.Dir(exe), hookcore.FullName)
}
