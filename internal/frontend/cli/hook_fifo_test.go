//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A transcript is a file the agent's own user can write: an agent that puts
// a named pipe where its transcript was must not hold the hook, which reads
// the transcript to count the model's use before it judges the call (an
// open for reading of a pipe waits for a writer). The call is judged at
// once, as with a transcript that cannot be read; the twin, a regular
// transcript, is judged the same.
func TestHookTranscriptNamedPipe(t *testing.T) {
	for _, pipe := range []bool{false, true} {
		name := "regular transcript"
		if pipe {
			name = "named pipe as transcript"
		}
		t.Run(name, func(t *testing.T) {
			home := hookHome(t)
			tr := filepath.Join(t.TempDir(), "session.jsonl")
			if pipe {
				if err := syscall.Mkfifo(tr, 0o600); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
			} else {
				line := `{"type":"assistant","message":{"id":"m1","model":"claude-x","usage":{"input_tokens":10,"output_tokens":5}}}` + "\n"
				if err := os.WriteFile(tr, []byte(line), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			ev, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": "/tmp", "hook_event_name": "PreToolUse",
				"tool_name": "Bash", "tool_input": map[string]any{"command": "echo hi"}, "tool_use_id": "tu-1",
				"transcript_path": tr})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			type res struct {
				code     int
				out, err string
			}
			done := make(chan res, 1)
			go func() {
				var out, errb bytes.Buffer
				code := Main(ctx, []string{"--home", home, "hook", "claude-code"}, bytes.NewReader(ev), &out, &errb)
				done <- res{code, out.String(), errb.String()}
			}()
			select {
			case r := <-done:
				if r.code != 0 || !strings.Contains(r.out, `"permissionDecision":"allow"`) {
					t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.out, r.err)
				}
			case <-time.After(20 * time.Second):
				// Let the hook go: a writer opens the pipe, and closes it.
				if f, err := os.OpenFile(tr, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				cancel()
				<-done
				t.Fatal("the hook waited on the named pipe at the transcript's path")
			}
		})
	}
}
