package watch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// FuzzRecognise: whatever a pane shows, recognising never panics, and a
// prompt it calls complete has a one-line subject made of drawn text,
// found at the bottom of the screen.
func FuzzRecognise(f *testing.F) {
	for _, fx := range fixtures(f) {
		f.Add(fx.Screen, fx.Process)
	}
	f.Add("Continue? (y/n)", "bash")
	set := builtinSet(f)
	f.Fuzz(func(t *testing.T, text, process string) {
		sc := NewScreen(text, 120, 40)
		p, ok := set.Recognise(sc, process)
		if !ok {
			return
		}
		if p.Bottom != sc.lastLine() {
			t.Fatalf("prompt ends at line %d, the screen at %d", p.Bottom, sc.lastLine())
		}
		if !p.Complete() {
			if !p.Action().HumanRequested {
				t.Fatal("an incomplete prompt does not ask for a person")
			}
			return
		}
		if p.Kind == action.KindShell {
			for _, k := range []string{"command", "cmd"} {
				if c, ok := p.Args[k].(string); ok && (strings.Contains(c, "\n") || strings.ContainsRune(c, '\uFFFD') || c == "") {
					t.Fatalf("complete prompt with command %q", c)
				}
			}
		}
		// A complete file or MCP call holds only drawn text, and a file's
		// path is one line.
		if b, err := json.Marshal(p.Args); err != nil || strings.Contains(string(b), `\ufffd`) || strings.ContainsRune(string(b), '\uFFFD') {
			t.Fatalf("complete prompt with undrawn characters: %s", b)
		}
		if fp, ok := p.Args["file_path"].(string); ok && (fp == "" || strings.Contains(fp, "\n")) {
			t.Fatalf("complete prompt with file path %q", fp)
		}
		if p.Kind == action.KindMCP && !strings.HasPrefix(p.Tool, "mcp__") {
			t.Fatalf("complete MCP prompt naming tool %q", p.Tool)
		}
		if len(p.Options) > 0 && p.AllowOnce >= 0 && set.rs != nil {
			if l := p.Options[p.AllowOnce].Label; strings.Contains(strings.ToLower(l), "always") || strings.Contains(strings.ToLower(l), "don't ask") {
				t.Fatalf("allow-once option %q", l)
			}
		}
	})
}

// FuzzParseCaptures: tmux output, whatever the panes print, is split only
// at the nonce's headers.
func FuzzParseCaptures(f *testing.F) {
	const nonce = "ovs-0123456789abcdef01234567"
	f.Add(nonce + " %1 80 24 0 0 0\nhello\n" + nonce + " %2 80 24 3 1 0\nworld\n")
	f.Add(nonce + " %1 80 24 0 0 0\novs-fake %2 80 24 0 0 0\n")
	panes := []Pane{{ID: "%1"}, {ID: "%2"}}
	f.Fuzz(func(t *testing.T, out string) {
		caps, err := parseCaptures(out, nonce, panes)
		if err != nil {
			return
		}
		if len(caps) != len(panes) {
			t.Fatalf("%d captures", len(caps))
		}
		for _, c := range caps {
			for _, l := range c.Screen.Lines {
				if strings.HasPrefix(l, nonce+" ") {
					t.Fatalf("a header line inside a screen: %q", l)
				}
			}
		}
	})
}
