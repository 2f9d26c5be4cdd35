package kernel_test

import (
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/clock"
)

// L5: the stagnation threshold first yields a strategy switch for the next
// prompt, once; the engine asks a person only after one more note.
func TestNoteStagnationSwitchesStrategyFirst(t *testing.T) {
	k := open(t, clock.Real{}, "version: 1\nsettings:\n  metacognition:\n    stagnation: 2\n")
	if s := k.NoteStagnation("s", "step 1: same"); s != "" {
		t.Fatalf("below the threshold: %q", s)
	}
	s := k.NoteStagnation("s", "step 2: same")
	if !strings.HasPrefix(s, "STRATEGY SWITCH: your last 2 steps") || !strings.Contains(s, "step 2: same") {
		t.Fatalf("at the threshold: %q", s)
	}
	if s := k.NoteStagnation("s", "step 3: same"); s != "" {
		t.Fatalf("the switch was injected twice: %q", s)
	}
	off := open(t, clock.Real{}, "version: 1\nsettings:\n  metacognition:\n    stagnation: -1\n")
	for i := 0; i < 5; i++ {
		if s := off.NoteStagnation("s", "same"); s != "" {
			t.Fatalf("stagnation off, still %q", s)
		}
	}
}
