package firewall_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/firewall"
)

func f64(v float64) *float64 { return &v }

type decisionCase struct {
	name string
	raw  string
	want firewall.Decision
	// reasonHas is checked instead of want.Reason for fallbacks.
	reasonHas string
}

var decisionCases = []decisionCase{
	{
		name: "fenced tool call",
		raw: "I will list the files first.\n\n```decision\n" +
			`{"action":"tool_call","tool":"bash","args":{"command":"ls -la"},"intent":"see the project layout","confidence":0.9,"human_required":false,"reason":"need the layout"}` +
			"\n```\n",
		want: firewall.Decision{Action: "tool_call", Tool: "bash", Args: map[string]any{"command": "ls -la"},
			Confidence: f64(0.9), Intent: "see the project layout", Reason: "need the layout", Source: "fenced"},
	},
	{
		name: "fenced chinese with CRLF",
		raw: "我先读取配置文件。\r\n```decision\r\n" +
			`{"action":"tool_call","tool":"read_file","args":{"path":"配置/设置.yaml"},"intent":"读取配置","confidence":0.75,"reason":"需要了解当前设置"}` +
			"\r\n```\r\n",
		want: firewall.Decision{Action: "tool_call", Tool: "read_file", Args: map[string]any{"path": "配置/设置.yaml"},
			Confidence: f64(0.75), Intent: "读取配置", Reason: "需要了解当前设置", Source: "fenced"},
	},
	{
		name: "done always needs a person",
		raw:  "All tests pass.\n```decision\n{\"action\":\"done\",\"confidence\":1,\"human_required\":false,\"reason\":\"tests pass\"}\n```",
		want: firewall.Decision{Action: "done", Confidence: f64(1), HumanRequired: true, Reason: "tests pass", Source: "fenced"},
	},
	{
		name: "ask human",
		raw:  "```decision\n{\"action\":\"ask_human\",\"reason\":\"要删除旧的备份吗？\",\"confidence\":0.3}\n```",
		want: firewall.Decision{Action: "ask_human", Confidence: f64(0.3), HumanRequired: true, Reason: "要删除旧的备份吗？", Source: "fenced"},
	},
	{
		name: "action is case and space insensitive",
		raw:  "```Decision\n{\"action\":\" Tool_Call \",\"tool\":\"bash\",\"args\":{\"command\":\"go test ./...\"},\"confidence\":0.6}\n```",
		want: firewall.Decision{Action: "tool_call", Tool: "bash", Args: map[string]any{"command": "go test ./..."},
			Confidence: f64(0.6), Source: "fenced"},
	},
	{
		name: "json fence with decision keys",
		raw:  "Plan:\n```json\n{\"action\":\"tool_call\",\"tool\":\"web_fetch\",\"arguments\":{\"url\":\"https://example.com\"},\"confidence\":0.5}\n```",
		want: firewall.Decision{Action: "tool_call", Tool: "web_fetch", Args: map[string]any{"url": "https://example.com"},
			Confidence: f64(0.5), Source: "fenced"},
	},
	{
		name: "json fence without decision keys is skipped for embedded",
		raw: "The config will be:\n```json\n{\"port\": 8080}\n```\nDecision: " +
			`{"action":"tool_call","tool":"write_file","args":{"path":"config.json","content":"{\"port\": 8080}"},"confidence":0.7}`,
		want: firewall.Decision{Action: "tool_call", Tool: "write_file",
			Args: map[string]any{"path": "config.json", "content": "{\"port\": 8080}"}, Confidence: f64(0.7), Source: "json"},
	},
	{
		name: "embedded json with braces in strings",
		raw:  `Running the command now {"action":"tool_call","tool":"bash","args":{"command":"awk '{print $1}' log.txt"},"confidence":0.8} and then I will check.`,
		want: firewall.Decision{Action: "tool_call", Tool: "bash", Args: map[string]any{"command": "awk '{print $1}' log.txt"},
			Confidence: f64(0.8), Source: "json"},
	},
	{
		name: "embedded after prose braces",
		raw:  "I considered {options} but chose:\n{\"action\":\"ask_human\",\"reason\":\"which branch?\"}",
		want: firewall.Decision{Action: "ask_human", HumanRequired: true, Reason: "which branch?", Source: "json"},
	},
	{
		name: "embedded nested in wrapper object",
		raw:  `{"decision": {"action":"tool_call","tool":"ls","confidence":0.4}}`,
		want: firewall.Decision{Action: "tool_call", Tool: "ls", Confidence: f64(0.4), Source: "json"},
	},
	{
		name: "repeated identical decisions are fine",
		raw:  "```decision\n{\"action\":\"done\"}\n```\nagain:\n```decision\n{\"action\":\"done\"}\n```",
		want: firewall.Decision{Action: "done", HumanRequired: true, Source: "fenced"},
	},
	{
		name: "confidence above one is absent",
		raw:  "```decision\n{\"action\":\"tool_call\",\"tool\":\"bash\",\"args\":{\"command\":\"ls\"},\"confidence\":85}\n```",
		want: firewall.Decision{Action: "tool_call", Tool: "bash", Args: map[string]any{"command": "ls"}, Source: "fenced"},
	},
	{
		name: "negative confidence is absent",
		raw:  "```decision\n{\"action\":\"tool_call\",\"tool\":\"bash\",\"confidence\":-0.1}\n```",
		want: firewall.Decision{Action: "tool_call", Tool: "bash", Source: "fenced"},
	},
	{
		name: "string confidence is absent",
		raw:  "```decision\n{\"action\":\"tool_call\",\"tool\":\"bash\",\"confidence\":\"high\"}\n```",
		want: firewall.Decision{Action: "tool_call", Tool: "bash", Source: "fenced"},
	},
	{
		name: "confidence zero is kept",
		raw:  "```decision\n{\"action\":\"tool_call\",\"tool\":\"bash\",\"confidence\":0}\n```",
		want: firewall.Decision{Action: "tool_call", Tool: "bash", Confidence: f64(0), Source: "fenced"},
	},
	{
		name: "non-bool human_required asks a person",
		raw:  "```decision\n{\"action\":\"tool_call\",\"tool\":\"bash\",\"human_required\":\"no\"}\n```",
		want: firewall.Decision{Action: "tool_call", Tool: "bash", HumanRequired: true, Source: "fenced"},
	},
	{
		name: "human_required true on tool call kept",
		raw:  "```decision\n{\"action\":\"tool_call\",\"tool\":\"rm\",\"human_required\":true}\n```",
		want: firewall.Decision{Action: "tool_call", Tool: "rm", HumanRequired: true, Source: "fenced"},
	},
	// Fallbacks: every one of these must come back human_required.
	{name: "empty reply", raw: "", reasonHas: "no decision"},
	{name: "prose only", raw: "I think the task is complete. 任务已完成。", reasonHas: "no decision"},
	{name: "malformed decision fence", raw: "```decision\n{\"action\":\"tool_call\",\"tool\":\"bash\",}\n```", reasonHas: "malformed"},
	{
		name:      "malformed decision fence does not fall back to embedded",
		raw:       "Earlier I said {\"action\":\"tool_call\",\"tool\":\"bash\",\"args\":{\"command\":\"rm -rf build\"}}\n```decision\n{action: done}\n```",
		reasonHas: "malformed",
	},
	{name: "cut off decision fence", raw: "```decision\n{\"action\":\"tool_call\",\"tool\":\"bash\",\"args\":{\"comm", reasonHas: "unclosed"},
	{name: "cut off embedded", raw: "{\"action\":\"tool_call\",\"tool\":\"bash\",\"args\":{\"comm", reasonHas: "no decision"},
	{name: "unknown action", raw: "```decision\n{\"action\":\"delete_everything\"}\n```", reasonHas: "unknown action"},
	{name: "empty action", raw: "```decision\n{\"action\":\"\"}\n```", reasonHas: "empty action"},
	{name: "non-string action", raw: "```decision\n{\"action\":1}\n```", reasonHas: "action is"},
	{name: "tool call without tool", raw: "```decision\n{\"action\":\"tool_call\",\"args\":{}}\n```", reasonHas: "without a tool"},
	{name: "non-string tool", raw: "```decision\n{\"action\":\"tool_call\",\"tool\":[\"bash\"]}\n```", reasonHas: "tool is"},
	{name: "args not an object", raw: "```decision\n{\"action\":\"tool_call\",\"tool\":\"bash\",\"args\":\"ls\"}\n```", reasonHas: "args is"},
	{name: "args and arguments", raw: "```decision\n{\"action\":\"tool_call\",\"tool\":\"bash\",\"args\":{},\"arguments\":{}}\n```", reasonHas: "both"},
	{name: "duplicate action key", raw: "```decision\n{\"action\":\"ask_human\",\"action\":\"tool_call\",\"tool\":\"bash\"}\n```", reasonHas: "repeats"},
	{name: "decision fence holding array", raw: "```decision\n[{\"action\":\"done\"}]\n```", reasonHas: "malformed"},
	{name: "decision fence without action", raw: "```decision\n{\"tool\":\"bash\"}\n```", reasonHas: "malformed"},
	{
		name:      "differing decision fences",
		raw:       "```decision\n{\"action\":\"ask_human\"}\n```\n```decision\n{\"action\":\"tool_call\",\"tool\":\"bash\"}\n```",
		reasonHas: "differing",
	},
	{
		name:      "differing embedded decisions",
		raw:       `first {"action":"tool_call","tool":"bash","args":{"command":"ls"}} or {"action":"tool_call","tool":"bash","args":{"command":"rm -rf /"}}`,
		reasonHas: "differing",
	},
	{name: "malformed embedded decision", raw: `ok {"action":"tool_call","tool":7}`, reasonHas: "malformed embedded"},
	{name: "too long", raw: strings.Repeat("a", 1<<20+1), reasonHas: "too long"},
}

func TestParseDecision(t *testing.T) {
	for _, tc := range decisionCases {
		t.Run(tc.name, func(t *testing.T) {
			got := firewall.ParseDecision(tc.raw)
			if tc.reasonHas != "" {
				if got.Source != firewall.SourceFallback || !got.HumanRequired || got.Action != firewall.ActionAskHuman {
					t.Fatalf("want a human_required fallback, got %+v", got)
				}
				if !strings.Contains(got.Reason, tc.reasonHas) {
					t.Fatalf("reason %q does not mention %q", got.Reason, tc.reasonHas)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v (confidence %v)\nwant %+v (confidence %v)", got, deref(got.Confidence), tc.want, deref(tc.want.Confidence))
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkDecisionInvariants holds for any reply whatsoever.
func checkDecisionInvariants(t *testing.T, raw string, d firewall.Decision) {
	t.Helper()
	switch d.Source {
	case firewall.SourceFenced, firewall.SourceJSON:
	case firewall.SourceFallback:
		if !d.HumanRequired || d.Action != firewall.ActionAskHuman {
			t.Fatalf("fallback without a person: %+v for %q", d, raw)
		}
	default:
		t.Fatalf("unknown source %q for %q", d.Source, raw)
	}
	switch d.Action {
	case firewall.ActionToolCall:
		if d.Tool == "" {
			t.Fatalf("tool_call without a tool: %+v for %q", d, raw)
		}
	case firewall.ActionAskHuman, firewall.ActionDone:
		if !d.HumanRequired {
			t.Fatalf("%s without human_required for %q", d.Action, raw)
		}
	default:
		t.Fatalf("unknown action %q came through for %q", d.Action, raw)
	}
	if c := d.Confidence; c != nil && (*c < 0 || *c > 1 || *c != *c) {
		t.Fatalf("confidence %v out of [0,1] for %q", *c, raw)
	}
}

func FuzzParseDecision(f *testing.F) {
	for _, tc := range decisionCases {
		if len(tc.raw) < 4096 {
			f.Add(tc.raw)
		}
	}
	f.Add("~~~decision\n{\"action\":\"done\"}\n~~~")
	f.Add("````decision\n{\"action\":\"tool_call\",\"tool\":\"x\"}\n```\n````")
	f.Fuzz(func(t *testing.T, raw string) {
		d := firewall.ParseDecision(raw)
		checkDecisionInvariants(t, raw, d)
		// A reply with no '{' at all cannot hold a decision.
		if !strings.Contains(raw, "{") && d.Source != firewall.SourceFallback {
			t.Fatalf("decision without any JSON object: %+v for %q", d, raw)
		}
	})
}

func BenchmarkParseDecision(b *testing.B) {
	raw := strings.Repeat("Reasoning about the repository layout and the failing test. 我们需要先检查日志。\n", 40) +
		"```decision\n" +
		`{"action":"tool_call","tool":"bash","args":{"command":"go test ./internal/..."},"intent":"run the tests","confidence":0.8,"reason":"verify the fix"}` +
		"\n```\n"
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		firewall.ParseDecision(raw)
	}
}

func BenchmarkParseDecisionEmbedded(b *testing.B) {
	raw := strings.Repeat("Some {braces} in prose and a map {a: b}. ", 20) +
		`{"action":"tool_call","tool":"bash","args":{"command":"ls"},"confidence":0.5}`
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		firewall.ParseDecision(raw)
	}
}
