package llmplan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/plugin"
)

// fakeLLM answers every request with its reply and keeps the requests.
type fakeLLM struct {
	reply plugin.Response
	err   error
	reqs  []plugin.Request
}

func (f *fakeLLM) Complete(_ context.Context, req plugin.Request) (plugin.Response, error) {
	f.reqs = append(f.reqs, req)
	return f.reply, f.err
}

func answerWith(text string) *fakeLLM {
	return &fakeLLM{reply: plugin.Response{Text: text, Usage: plugin.Usage{InputTokens: 120, OutputTokens: 30, CostUSD: 0.01}}}
}

var parseCases = []struct {
	name     string
	text     string
	mode     mode
	wantFlag bool
	wantSubs []string
	wantNote string
	wantErr  bool
}{
	{name: "bare plan", text: `{"subtasks": ["read the code", "write the fix"]}`, wantSubs: []string{"read the code", "write the fix"}},
	{name: "bare simple", text: `{"simple": true}`, wantFlag: true},
	{name: "fenced json", text: "Here is the plan:\n```json\n{\"subtasks\": [\"a\", \"b\"]}\n```\nGood luck.", wantSubs: []string{"a", "b"}},
	{name: "fence without language", text: "```\n{\"simple\": true}\n```", wantFlag: true},
	{name: "embedded in prose", text: `Sure! I think {"subtasks": ["one", "two"]} is best.`, wantSubs: []string{"one", "two"}},
	{name: "prose braces before the object", text: `Use {curly} braces: {"subtasks": ["x"]}`, wantSubs: []string{"x"}},
	{name: "fenced but broken, valid one after", text: "```json\n{\"subtasks\": [\n```\nOops: {\"simple\": true}", wantFlag: true},
	{name: "object items with titles", text: `{"subtasks": [{"title": "first"}, {"title": "second", "why": "x"}, 3]}`, wantSubs: []string{"first", "second"}},
	{name: "empty list is simple", text: `{"subtasks": []}`, wantSubs: []string{}},
	{name: "simple false and no subtasks", text: `{"simple": false}`, wantErr: true},
	{name: "keep is not a plan answer", text: `{"keep": true}`, wantErr: true},
	{name: "subtasks not an array", text: `{"subtasks": "do it all"}`, wantErr: true},
	{name: "garbage", text: "I cannot help with that.", wantErr: true},
	{name: "empty", text: "  \n", wantErr: true},
	{name: "unterminated", text: `{"subtasks": ["a", "b"`, wantErr: true},
	{name: "huge", text: `{"subtasks": ["` + strings.Repeat("a", maxReplyBytes) + `"]}`, wantErr: true},
	{name: "many braces of prose", text: strings.Repeat("{ not json ", 10000), wantErr: true},
	{name: "Chinese", text: "计划如下：\n```json\n{\"subtasks\": [\"阅读代码\", \"修复错误\"]}\n```", wantSubs: []string{"阅读代码", "修复错误"}},
	{name: "reflect keep", text: `{"keep": true, "notes": "on track"}`, mode: modeReflect, wantFlag: true, wantNote: "on track"},
	{name: "reflect revise", text: "```json\n{\"subtasks\": [\"c\"], \"notes\": \"b was unnecessary\"}\n```", mode: modeReflect, wantSubs: []string{"c"}, wantNote: "b was unnecessary"},
	{name: "reflect notes not a string", text: `{"keep": true, "notes": ["x"]}`, mode: modeReflect, wantFlag: true},
	{name: "simple is not a reflect answer", text: `{"simple": true}`, mode: modeReflect, wantErr: true},
}

func TestParseReply(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseReply(tc.text, tc.mode)
			if tc.wantErr {
				if !errors.Is(err, ErrUnparseable) {
					t.Fatalf("err = %v, want ErrUnparseable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.flag != tc.wantFlag || r.notes != tc.wantNote {
				t.Fatalf("flag %v notes %q; want %v %q", r.flag, r.notes, tc.wantFlag, tc.wantNote)
			}
			if !tc.wantFlag && !reflect.DeepEqual(r.subtasks, tc.wantSubs) {
				t.Fatalf("subtasks = %q, want %q", r.subtasks, tc.wantSubs)
			}
		})
	}
}

func FuzzParseReply(f *testing.F) {
	for _, tc := range parseCases {
		if len(tc.text) < 4096 {
			f.Add(tc.text, tc.mode == modeReflect)
		}
	}
	f.Fuzz(func(t *testing.T, text string, reflectMode bool) {
		m := modePlan
		if reflectMode {
			m = modeReflect
		}
		r, err := parseReply(text, m)
		if err != nil {
			if !errors.Is(err, ErrUnparseable) {
				t.Fatalf("error %v does not wrap ErrUnparseable", err)
			}
			return
		}
		if r.flag && len(r.subtasks) > 0 {
			t.Fatalf("both a flag and subtasks")
		}
		for _, s := range cleanTitles(r.subtasks, 8) {
			if strings.TrimSpace(s) == "" || strings.ContainsAny(s, "\n\r") {
				t.Fatalf("bad title %q", s)
			}
		}
	})
}

func TestCleanTitles(t *testing.T) {
	tests := []struct {
		name  string
		in    []string
		limit int
		want  []string
	}{
		{"blanks dropped", []string{"a", "", "  \n ", "b"}, 8, []string{"a", "b"}},
		{"repeats dropped ignoring case and spacing", []string{"Run tests", "run  tests", "RUN TESTS"}, 8, []string{"Run tests"}},
		{"capped", []string{"1", "2", "3", "4"}, 2, []string{"1", "2"}},
		{"list markers stripped", []string{"1. read", "2) write", "- test", "[ ] ship", "[x] 3. done"}, 8, []string{"read", "write", "test", "ship", "done"}},
		{"number that is the title stays", []string{"2024 report"}, 8, []string{"2024 report"}},
		{"one line", []string{"first\nsecond"}, 8, []string{"first second"}},
		{"long title cut", []string{strings.Repeat("é", 300)}, 8, []string{strings.Repeat("é", maxTitleRunes-1) + "…"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := cleanTitles(tc.in, tc.limit); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		wantMax int
		wantErr bool
	}{
		{"empty", "", DefaultMaxSubtasks, false},
		{"set", `{"max_subtasks": 5}`, 5, false},
		{"zero is default", `{"max_subtasks": 0}`, DefaultMaxSubtasks, false},
		{"unknown field", `{"max": 5}`, 0, true},
		{"negative", `{"max_subtasks": -1}`, 0, true},
		{"too many", `{"max_subtasks": 500}`, 0, true},
		{"trailing", `{} x`, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inst, err := plugin.New("plan.llm", json.RawMessage(tc.raw))
			if tc.wantErr {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("err = %v, want ErrConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, ok := inst.(*Planner)
			if !ok || p.MaxSubtasks() != tc.wantMax {
				t.Fatalf("got %T with max %d, want *Planner with %d", inst, p.MaxSubtasks(), tc.wantMax)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		want    []string
		wantErr error
	}{
		{"plan", "```json\n{\"subtasks\": [\"1. find the failing test\", \"fix it\", \"Fix it\", \"\", \"run the suite\", \"tag\"]}\n```", []string{"find the failing test", "fix it", "run the suite"}, nil},
		{"simple", `{"simple": true}`, nil, nil},
		{"simple wins over subtasks", `{"simple": true, "subtasks": ["a"]}`, nil, nil},
		{"unparseable", "Let me think about it.", nil, ErrUnparseable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			llm := answerWith(tc.reply)
			p := New(Config{MaxSubtasks: 3})
			plan, u, err := p.Plan(context.Background(), llm, "make CI green", "memory: CI uses Go 1.26")
			if u != llm.reply.Usage {
				t.Fatalf("usage = %+v, want the response's", u)
			}
			if len(llm.reqs) != 1 {
				t.Fatalf("%d requests", len(llm.reqs))
			}
			req := llm.reqs[0]
			if req.Purpose != plugin.PurposePlan || !strings.Contains(req.System, "at most 3 ordered subtasks") ||
				!strings.Contains(req.Messages[0].Content, "make CI green") || !strings.Contains(req.Messages[0].Content, "CI uses Go 1.26") {
				t.Fatalf("request = %+v", req)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if len(plan.Subtasks) != 0 {
					t.Fatalf("a plan came with the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range plan.Subtasks {
				if s.Done || s.Result != "" {
					t.Fatalf("new subtask %+v is not fresh", s)
				}
				got = append(got, s.Title)
			}
			if !reflect.DeepEqual(got, tc.want) || plan.Revision != 0 || plan.Current() != min(0, len(got)-1) {
				t.Fatalf("plan = %+v, want titles %q", plan, tc.want)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	p := New(Config{})
	if _, _, err := p.Plan(context.Background(), nil, "g", ""); !errors.Is(err, ErrNoModel) {
		t.Fatalf("nil model: err = %v", err)
	}
	boom := errors.New("server down")
	llm := &fakeLLM{err: boom}
	if _, _, err := p.Plan(context.Background(), llm, "g", ""); !errors.Is(err, boom) {
		t.Fatalf("model error: err = %v", err)
	}
	cut := &fakeLLM{reply: plugin.Response{Text: `{"subtasks": ["a", "b`, Truncated: true}}
	if _, _, err := p.Plan(context.Background(), cut, "g", ""); !errors.Is(err, ErrUnparseable) || !strings.Contains(err.Error(), "cut off") {
		t.Fatalf("truncated: err = %v", err)
	}
}

func testPlan() plugin.Plan {
	return plugin.Plan{Revision: 2, Notes: "old notes", Subtasks: []plugin.Subtask{
		{Title: "reproduce", Done: true, Result: "fails on vet"},
		{Title: "fix vet warnings"},
		{Title: "update docs"},
		{Title: "run tests"},
	}}
}

func TestReflect(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		want    plugin.Plan
		wantErr error
	}{
		{
			name:  "keep",
			reply: `{"keep": true, "notes": "on track"}`,
			want: plugin.Plan{Revision: 2, Notes: "on track", Subtasks: []plugin.Subtask{
				{Title: "reproduce", Done: true, Result: "fails on vet"},
				{Title: "fix vet warnings", Done: true},
				{Title: "update docs"},
				{Title: "run tests"},
			}},
		},
		{
			name:  "revise keeps done subtasks",
			reply: "The docs need no change.\n```json\n{\"subtasks\": [\"run tests\", \"open a pull request\", \"run tests\"], \"notes\": \"docs are fine\"}\n```",
			want: plugin.Plan{Revision: 3, Notes: "docs are fine", Subtasks: []plugin.Subtask{
				{Title: "reproduce", Done: true, Result: "fails on vet"},
				{Title: "fix vet warnings", Done: true},
				{Title: "run tests"},
				{Title: "open a pull request"},
			}},
		},
		{
			name:  "nothing left",
			reply: `{"subtasks": [], "notes": "done early"}`,
			want: plugin.Plan{Revision: 3, Notes: "done early", Subtasks: []plugin.Subtask{
				{Title: "reproduce", Done: true, Result: "fails on vet"},
				{Title: "fix vet warnings", Done: true},
			}},
		},
		{name: "unparseable keeps the plan", reply: "hmm", want: testPlan(), wantErr: ErrUnparseable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := testPlan()
			llm := answerWith(tc.reply)
			got, u, err := New(Config{}).Reflect(context.Background(), llm, "make CI green", in, 1, "known things")
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if u != llm.reply.Usage {
				t.Fatalf("usage = %+v", u)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("plan =\n%+v\nwant\n%+v", got, tc.want)
			}
			if !reflect.DeepEqual(in, testPlan()) {
				t.Fatalf("the caller's plan was changed: %+v", in)
			}
			req := llm.reqs[0]
			content := req.Messages[0].Content
			for _, w := range []string{"make CI green", "1. [done] reproduce — result: fails on vet", "2. [done] fix vet warnings  ← just completed", "3. [todo] update docs", "Subtask 2 (\"fix vet warnings\") was just completed.", "known things"} {
				if !strings.Contains(content, w) {
					t.Fatalf("prompt lacks %q:\n%s", w, content)
				}
			}
			if req.Purpose != plugin.PurposeReflect {
				t.Fatalf("purpose %q", req.Purpose)
			}
		})
	}
}

func TestReflectErrors(t *testing.T) {
	p := New(Config{})
	tests := []struct {
		name string
		llm  plugin.LLM
		done int
		want error
	}{
		{"nil model", nil, 0, ErrNoModel},
		{"done out of range", answerWith(`{"keep": true}`), 9, ErrNoSubtask},
		{"done negative", answerWith(`{"keep": true}`), -1, ErrNoSubtask},
		{"model error", &fakeLLM{err: errors.New("down")}, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := p.Reflect(context.Background(), tc.llm, "g", testPlan(), tc.done, "")
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !reflect.DeepEqual(got, testPlan()) {
				t.Fatalf("plan changed on error: %+v", got)
			}
		})
	}
}

func TestRevisionCapsRemaining(t *testing.T) {
	subs := make([]string, 20)
	for i := range subs {
		subs[i] = fmt.Sprintf("%q", fmt.Sprintf("task %d", i))
	}
	llm := answerWith(`{"subtasks": [` + strings.Join(subs, ",") + `]}`)
	got, _, err := New(Config{MaxSubtasks: 4}).Reflect(context.Background(), llm, "g", testPlan(), 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Subtasks); n != 2+4 {
		t.Fatalf("%d subtasks, want 2 done + 4", n)
	}
}
