package hookcore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// WithdrawTimeout bounds the hook's withdrawal of the request it holds on
// its way out.
const WithdrawTimeout = 2 * time.Second

// DeadlineMargin is added to the max wait for the hook's own deadline;
// `overseer init` sets the agent's timeout a further margin above it.
const DeadlineMargin = 15 * time.Second

// Serve runs handle for one hook call within limit, writes its answer and
// returns the exit status, which is 0 or 2 and nothing else. A panic in
// handle, its deadline passing or ctx ending (the agent interrupted the
// hook) ends in a deny. When ctx ends, handle is given WithdrawTimeout to
// withdraw the request it holds (it does so on a context of its own).
func Serve(ctx context.Context, limit time.Duration, handle func(ctx context.Context) Response, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	done := make(chan Response, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- Failure(fmt.Sprintf("the hook failed (panic: %v), so the call is denied", p))
			}
		}()
		done <- handle(ctx)
	}()
	var resp Response
	select {
	case resp = <-done:
	case <-ctx.Done():
		// The handler's answer, if any, is never written; its goroutine
		// ends with the process.
		resp = Failure(fmt.Sprintf("the hook did not decide within %s, so the call is denied", limit))
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// Interrupted: give the handler a moment to withdraw the
			// request it holds.
			select {
			case <-done:
			case <-time.After(WithdrawTimeout):
			}
			resp = Failure("the hook was interrupted before a decision, so the call is denied")
		}
	}
	return Write(resp, stdout, stderr)
}

// Write writes the response; if standard output cannot be written, the
// call is denied through the exit status. It returns the exit status, 0 or
// 2.
func Write(resp Response, stdout, stderr io.Writer) int {
	if resp.Code != 0 && resp.Code != 2 {
		resp.Code = 2
	}
	if len(resp.Stdout) > 0 {
		if _, err := stdout.Write(resp.Stdout); err != nil {
			resp = Failure("could not write the answer: " + err.Error())
		}
	}
	if resp.Stderr != "" {
		_, _ = io.WriteString(stderr, resp.Stderr)
	}
	return resp.Code
}
