package ingest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParseClaudeCode reads the recorded Claude Code transcript: the
// rate at which ingest gets through a session's lines (most of them
// bookkeeping it skips).
func BenchmarkParseClaudeCode(b *testing.B) { benchParse(b, FormatClaudeCode, "claude-code-a.jsonl") }

// BenchmarkParseCodex reads the recorded Codex rollout.
func BenchmarkParseCodex(b *testing.B) { benchParse(b, FormatCodex, "codex-a.jsonl") }

func benchParse(b *testing.B, format, name string) {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		p, _ := NewParser(format, name)
		got, err := ReadAll(p, name, bytes.NewReader(data), 0, false)
		if err != nil || len(got.Events) == 0 {
			b.Fatalf("%v %d", err, len(got.Events))
		}
	}
}
