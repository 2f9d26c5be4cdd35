package hookcore

import (
	"fmt"
	"io"
	"os"
	"testing"
)

// TestEventFileSealed: the event handed to the full hook is in an
// anonymous file another process of the user can open again through
// /proc/PID/fd; it must not be able to change what the full hook reads
// (and judges). The twin: the event reads back whole.
func TestEventFileSealed(t *testing.T) {
	event := []byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /srv"}}`)
	f, err := eventFile(event)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		_, werr := w.WriteAt([]byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}     `), 0)
		w.Close()
		if werr == nil {
			t.Fatal("another process rewrote the event through " + path)
		}
	}
	if err := os.Truncate(path, 0); err == nil {
		t.Fatal("another process truncated the event through " + path)
	}
	got, err := io.ReadAll(f)
	if err != nil || string(got) != string(event) {
		t.Fatalf("the event reads back %q (%v)", got, err)
	}
}
