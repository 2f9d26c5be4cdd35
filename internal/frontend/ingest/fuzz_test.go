package ingest

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// seedLines adds every line of the fixture files to f.
func seedLines(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
	}
}

// fuzzLine checks what holds for any line: no panic; every call names a
// tool and has arguments; every result names its call; keys are stable.
func fuzzLine(t *testing.T, format string, line []byte) {
	p, err := NewParser(format, "f.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := p.Line(1, line)
	for _, e := range evs {
		if c := e.Call; c != nil {
			if c.Tool == "" || c.Input == nil || c.Origin.Line != 1 || c.Key() != c.Key() || len(c.Key()) != 32 {
				t.Fatalf("bad call %+v", c)
			}
		}
		if r := e.Result; r != nil {
			if r.CallKey() == "" || len(r.Text) > MaxResultText+len("…") {
				t.Fatalf("bad result %+v", r)
			}
			if ch := r.Change; ch != nil && (ch.Path == "" || len(ch.After) > MaxChange) {
				t.Fatalf("bad change %+v", ch)
			}
		}
	}
	// The whole-file reader agrees with the line parser.
	p2, _ := NewParser(format, "f.jsonl")
	got, err := ReadAll(p2, "f.jsonl", bytes.NewReader(append(append([]byte(nil), line...), '\n')), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(line, "\n") {
		return
	}
	if len(bytes.TrimSpace(line)) > 0 && len(got.Events) != len(evs) {
		t.Fatalf("ReadAll found %d events, Line %d", len(got.Events), len(evs))
	}
}

func FuzzClaudeCodeLine(f *testing.F) {
	seedLines(f, "claude-code-a.jsonl", "claude-code-subagent.jsonl")
	f.Fuzz(func(t *testing.T, line []byte) { fuzzLine(t, FormatClaudeCode, line) })
}

func FuzzCodexLine(f *testing.F) {
	seedLines(f, "codex-a.jsonl", "codex-patch-a.jsonl")
	f.Fuzz(func(t *testing.T, line []byte) { fuzzLine(t, FormatCodex, line) })
}

func FuzzGenericLine(f *testing.F) {
	f.Add([]byte(`{"agent":"bot","session":"s1","id":"c1","tool":"bash","args":{"command":"ls"},"cwd":"/srv"}`))
	f.Add([]byte(`{"agent":"bot","tool":"w","args":{},"change":{"path":"/a","before":null,"after":"x"},"result":{"is_error":true,"text":"no"}}`))
	f.Add([]byte(`{"agent":"bot","tool":"w","args":[]}`))
	f.Fuzz(func(t *testing.T, line []byte) { fuzzLine(t, FormatGeneric, line) })
}
