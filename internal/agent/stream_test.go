package agent

import (
	"bytes"
	"testing"
)

func TestFenceFilter(t *testing.T) {
	tests := []struct {
		name   string
		pieces []string
		want   string
	}{
		{"plain", []string{"I will read ", "the file."}, "I will read the file.\n"},
		{"decision hidden", []string{"Reading it.\n\n```decision\n{\"action\":\"done\"}\n```"}, "Reading it.\n"},
		{"fence split across pieces", []string{"Reading it.\n`", "``dec", "ision\n{", "\"action\":1}\n```"}, "Reading it.\n"},
		{"blank lines inside are kept", []string{"one\n", "\n", "two\n\n"}, "one\n\ntwo\n"},
		{"leading blank lines dropped", []string{"\n\n  hi"}, "  hi\n"},
		{"json fence hidden", []string{"ok ```JSON\n{}```"}, "ok\n"},
		{"other fences shown", []string{"run:\n```sh\nls\n```\nthen ```decision\n{}"}, "run:\n```sh\nls\n```\nthen\n"},
		{"backticks at the end are shown", []string{"use `ls`"}, "use `ls`\n"},
		{"partial fence at the end is dropped", []string{"bye ```deci"}, "bye\n"},
		{"nothing", nil, ""},
		{"four backticks", []string{"a ````decision\n{}\n````"}, "a\n"},
		{"four backticks split", []string{"a ``", "``", "deci", "sion\n{}"}, "a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			f := &fenceFilter{w: &Loop{out: &out}}
			for _, p := range tt.pieces {
				f.write(p)
			}
			f.flush()
			if out.String() != tt.want {
				t.Fatalf("got %q, want %q", out.String(), tt.want)
			}
		})
	}
}

func FuzzFenceFilter(f *testing.F) {
	f.Add("text ```decision\n{}\n```", 3)
	f.Add("```sh\nls\n``` ok", 1)
	f.Add("````decision\n", 2)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		var out bytes.Buffer
		ff := &fenceFilter{w: &Loop{out: &out}}
		if cut < 0 {
			cut = -cut
		}
		cut = cut % (len(s) + 1)
		ff.write(s[:cut])
		ff.write(s[cut:])
		ff.flush()
		var whole bytes.Buffer
		fw := &fenceFilter{w: &Loop{out: &whole}}
		fw.write(s)
		fw.flush()
		if out.String() != whole.String() {
			t.Fatalf("splitting changed the output: %q vs %q", out.String(), whole.String())
		}
		if bytes.Contains(out.Bytes(), []byte("```decision")) {
			t.Fatalf("decision fence shown: %q", out.String())
		}
	})
}

func TestTerminalDecision(t *testing.T) {
	tests := []struct {
		line                  string
		question, confirmDone bool
		want                  string
		ok                    bool
	}{
		{line: "y", want: "approve", ok: true},
		{line: "YES", want: "approve", ok: true},
		{line: "n", want: "deny", ok: true},
		{line: "stop", want: "abort", ok: true},
		{line: "no, write it under docs/ instead", want: "deny", ok: true},
		{line: "不要执行", want: "deny", ok: true},
		{line: "可以", want: "approve", ok: true},
		{line: "hmm, what does it do?", ok: false},
		{line: "use the staging database", ok: false},
		{line: "use the staging database", question: true, want: "approve", ok: true},
		{line: "also update the changelog", question: true, confirmDone: true, want: "deny", ok: true},
		{line: "ok?", question: false, ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, ok := terminalDecision(tt.line, tt.question, tt.confirmDone)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("got %q %v, want %q %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
