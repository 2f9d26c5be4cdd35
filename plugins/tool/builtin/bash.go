package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/overseer-dev/overseer/plugin"
)

type bashArgs struct {
	Command        string      `json:"command"`
	TimeoutSeconds json.Number `json:"timeout_seconds,omitempty"`
	Description    string      `json:"description,omitempty"`
}

// bash runs the command with bash -c in the call's working directory.
func (t *Tools) bash(ctx context.Context, c plugin.Call) (plugin.Result, error) {
	var args bashArgs
	if err := decodeArgs(c.Args, &args); err != nil {
		return plugin.Result{}, err
	}
	if args.Command == "" {
		return plugin.Result{}, errors.New("command is empty")
	}
	if c.Cwd == "" || !filepath.IsAbs(c.Cwd) {
		return plugin.Result{}, fmt.Errorf("the working directory %q is not an absolute path", c.Cwd)
	}
	timeout := time.Duration(t.cfg.BashTimeout)
	if args.TimeoutSeconds != "" {
		n, err := args.TimeoutSeconds.Int64()
		if err != nil || n < 1 {
			return plugin.Result{}, fmt.Errorf("timeout_seconds must be a positive whole number")
		}
		if d := time.Duration(n) * time.Second; d < timeout {
			timeout = d
		}
	}
	bashPath, err := exec.LookPath("bash")
	if err != nil {
		return plugin.Result{}, fmt.Errorf("bash is not installed: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bashPath, "-c", args.Command)
	cmd.Dir = c.Cwd
	ownProcessGroup(cmd)
	// A grandchild holding the output pipe open must not keep the call
	// waiting past its timeout.
	cmd.WaitDelay = 2 * time.Second
	out := &cappedBuffer{max: t.cfg.MaxOutputBytes}
	cmd.Stdout = out
	cmd.Stderr = out
	start := time.Now()
	runErr := cmd.Run()
	meta := map[string]any{"duration_ms": time.Since(start).Milliseconds()}
	res := plugin.Result{Meta: meta}
	text := out.text(meta)
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		meta["timed_out"] = true
		res.IsError = true
		text += fmt.Sprintf("\n[the command was stopped after %s]", timeout)
	case ctx.Err() != nil:
		res.IsError = true
		text += "\n[the command was cancelled]"
	case errors.As(runErr, &exitErr):
		meta["exit_code"] = exitErr.ExitCode()
		res.IsError = true
		text += fmt.Sprintf("\n[exit status %d]", exitErr.ExitCode())
	case runErr != nil:
		return plugin.Result{}, fmt.Errorf("running bash: %w", runErr)
	default:
		meta["exit_code"] = 0
	}
	res.Output = text
	return res, nil
}
