package mcpguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/mcpguard"
	"github.com/overseer-dev/overseer/internal/policy"
)

func ptr(b bool) *bool { return &b }

func call(kind action.Kind) *action.Action {
	return &action.Action{Tool: "fs__thing", Kind: kind, Args: map[string]any{"path": "/tmp/x"}}
}

// The classification of annotated tools, through the real engine with the
// built-in policy (mcp default: confirm).
func TestAnnotationsThroughTheEngine(t *testing.T) {
	g, err := mcpguard.New(mcpguard.Config{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := firewall.New(context.Background(), firewall.Config{Policy: policy.Builtin(), Guards: []guard.Guard{g}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		kind  action.Kind
		ann   *mcpguard.Annotations
		want  action.Level
		check string
	}{
		{"no annotations: the mcp default", action.KindMCP, nil, action.Confirm, ""},
		{"empty annotations: the mcp default", action.KindMCP, &mcpguard.Annotations{}, action.Confirm, ""},
		{"read-only closed world", action.KindMCP, &mcpguard.Annotations{ReadOnly: true, OpenWorld: ptr(false)}, action.Auto, "mcp.read-only"},
		{"read-only, open world unsaid", action.KindMCP, &mcpguard.Annotations{ReadOnly: true}, action.Notify, "mcp.read-only-open-world"},
		{"read-only open world", action.KindMCP, &mcpguard.Annotations{ReadOnly: true, OpenWorld: ptr(true)}, action.Notify, "mcp.read-only-open-world"},
		{"additive", action.KindMCP, &mcpguard.Annotations{Destructive: ptr(false)}, action.Confirm, "mcp.additive"},
		{"destructive", action.KindMCP, &mcpguard.Annotations{Destructive: ptr(true)}, action.Approve, "mcp.destructive"},
		{"destructive unsaid, idempotent", action.KindMCP, &mcpguard.Annotations{Idempotent: true}, action.Approve, "mcp.destructive"},
		{"mapped kind ignores annotations", action.KindFileWrite, &mcpguard.Annotations{ReadOnly: true, OpenWorld: ptr(false)}, action.Confirm, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := call(c.kind)
			if c.ann != nil {
				mcpguard.Annotate(a, *c.ann)
			}
			v := eng.Evaluate(context.Background(), a)
			if v.Level != c.want {
				t.Fatalf("level %s, want %s (%s)", v.Level, c.want, v.Summary())
			}
			if c.check != "" && (v.Decider == nil || v.Decider.Name != c.check) {
				t.Fatalf("decider %+v, want %s", v.Decider, c.check)
			}
		})
	}
}

// Forged, altered or replayed annotations never lower a level.
func TestUnsealedAnnotationsFailClosed(t *testing.T) {
	g, _ := mcpguard.New(mcpguard.Config{})
	readOnly := mcpguard.Annotations{ReadOnly: true, OpenWorld: ptr(false)}
	cases := []struct {
		name string
		make func() *action.Action
	}{
		{"forged note", func() *action.Action {
			a := call(action.KindMCP)
			a.Facts.Notes = []string{mcpguard.NoteAnnotations + `{"read_only":true,"open_world":false} sig=00`}
			return a
		}},
		{"no seal", func() *action.Action {
			a := call(action.KindMCP)
			a.Facts.Notes = []string{mcpguard.NoteAnnotations + `{"read_only":true}`}
			return a
		}},
		{"arguments changed after sealing", func() *action.Action {
			a := call(action.KindMCP)
			mcpguard.Annotate(a, readOnly)
			a.Args["path"] = "/etc/shadow"
			return a
		}},
		{"note moved to another tool", func() *action.Action {
			a := call(action.KindMCP)
			mcpguard.Annotate(a, readOnly)
			a.Tool = "fs__delete"
			return a
		}},
		{"body altered", func() *action.Action {
			a := call(action.KindMCP)
			mcpguard.Annotate(a, mcpguard.Annotations{Destructive: ptr(true)})
			a.Facts.Notes[0] = strings.Replace(a.Facts.Notes[0], `"destructive":true`, `"read_only":true`, 1)
			return a
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, err := g.Check(context.Background(), c.make())
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != 1 || fs[0].Check != "mcp.unsealed-annotations" || !fs[0].Hard || fs[0].Level < action.Confirm {
				t.Fatalf("findings %+v, want one hard confirm", fs)
			}
		})
	}
}

func TestSchemaUncheckedIsAHardFloor(t *testing.T) {
	g, _ := mcpguard.New(mcpguard.Config{})
	a := call(action.KindMCP)
	mcpguard.Annotate(a, mcpguard.Annotations{ReadOnly: true, OpenWorld: ptr(false)})
	mcpguard.MarkSchemaUnchecked(a, "unsupported $schema")
	mcpguard.MarkStripped(a, []string{"extra"})
	fs, err := g.Check(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	var hard, soft int
	for _, f := range fs {
		if f.Hard {
			hard++
			if f.Level != action.Confirm || !strings.Contains(f.Message, "unsupported $schema") {
				t.Errorf("hard finding %+v", f)
			}
		} else {
			soft++
		}
	}
	if hard != 1 || soft != 1 {
		t.Fatalf("findings %+v: want one hard, one soft", fs)
	}
}

func TestConfigFromPolicy(t *testing.T) {
	cases := []struct {
		name, yaml string
		wantErr    string
		ann        mcpguard.Annotations
		want       action.Level
	}{
		{"defaults", "version: 1\n", "", mcpguard.Annotations{Destructive: ptr(true)}, action.Approve},
		{"tuned", "version: 1\nguards:\n  mcp:\n    destructive: block\n", "", mcpguard.Annotations{Destructive: ptr(true)}, action.Block},
		{"ignore annotations", "version: 1\nguards:\n  mcp:\n    ignore_annotations: true\n", "",
			mcpguard.Annotations{ReadOnly: true, OpenWorld: ptr(false)}, action.Unset},
		{"unknown field", "version: 1\nguards:\n  mcp:\n    destructve: block\n", "destructve", mcpguard.Annotations{}, 0},
		{"bad level", "version: 1\nguards:\n  mcp:\n    additive: maybe\n", "maybe", mcpguard.Annotations{}, 0},
		{"unchecked too loose", "version: 1\nguards:\n  mcp:\n    unchecked_schema: notify\n", "unchecked_schema", mcpguard.Annotations{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := policy.Parse("p.yaml", []byte(c.yaml), policy.Options{})
			if err != nil {
				if c.wantErr != "" && strings.Contains(err.Error(), c.wantErr) {
					return
				}
				t.Fatal(err)
			}
			g, err := mcpguard.FromPolicy(p)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := call(action.KindMCP)
			mcpguard.Annotate(a, c.ann)
			fs, err := g.Check(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			got := action.Unset
			for _, f := range fs {
				got = action.Max(got, f.Level)
			}
			if got != c.want {
				t.Fatalf("level %s, want %s (%+v)", got, c.want, fs)
			}
		})
	}
}

func TestParseNote(t *testing.T) {
	a := call(action.KindMCP)
	mcpguard.Annotate(a, mcpguard.Annotations{ReadOnly: true, OpenWorld: ptr(true)})
	an, sig, err := mcpguard.ParseNote(a.Facts.Notes[0])
	if err != nil || !an.ReadOnly || an.OpenWorld == nil || !*an.OpenWorld || len(sig) != 64 {
		t.Fatalf("ParseNote = %+v %q %v", an, sig, err)
	}
	for _, bad := range []string{"", "mcp.annotations ", "mcp.annotations {} ", `mcp.annotations {"x":1} sig=aa`,
		`mcp.annotations {"read_only":true}{} sig=aa`, `other {"read_only":true} sig=aa`} {
		if _, _, err := mcpguard.ParseNote(bad); err == nil {
			t.Errorf("ParseNote(%q) accepted", bad)
		}
	}
}

func FuzzParseNote(f *testing.F) {
	a := call(action.KindMCP)
	mcpguard.Annotate(a, mcpguard.Annotations{ReadOnly: true, Destructive: ptr(false), OpenWorld: ptr(true), Idempotent: true})
	for _, s := range []string{a.Facts.Notes[0], "mcp.annotations {} sig=", `mcp.annotations {"read_only":true} sig=zz`, "mcp.annotations  sig= sig="} {
		f.Add(s)
	}
	g, _ := mcpguard.New(mcpguard.Config{})
	f.Fuzz(func(t *testing.T, n string) {
		_, _, _ = mcpguard.ParseNote(n)
		// The seeds were sealed for other arguments: nothing the fuzzer
		// writes is sealed for these.
		b := call(action.KindMCP)
		b.Args["path"] = "/tmp/other"
		b.Facts.Notes = []string{n}
		fs, err := g.Check(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		// A note that was not sealed here never yields a level below confirm.
		for _, f := range fs {
			if f.Level < action.Confirm {
				t.Fatalf("an unsealed note lowered the level: %q gave %+v", n, f)
			}
		}
	})
}

// An MCP call without annotations (an agent's own call, seen by its hooks)
// whose tool is named as one that only reads, with arguments that hold no
// statement, command, code or URL, is notify through the engine with the
// built-in policy; every other one keeps the mcp default (confirm), and
// the other guards still judge its arguments.
func TestReadNames(t *testing.T) {
	g, err := mcpguard.New(mcpguard.Config{})
	if err != nil {
		t.Fatal(err)
	}
	off, err := mcpguard.New(mcpguard.Config{IgnoreNames: true})
	if err != nil {
		t.Fatal(err)
	}
	eng := func(g guard.Guard) *firewall.Engine {
		e, err := firewall.New(context.Background(), firewall.Config{Policy: policy.Builtin(), Guards: []guard.Guard{g}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	on, ignoring := eng(g), eng(off)
	cases := []struct {
		tool string
		args map[string]any
		want action.Level
	}{
		{"mcp__github__get_issue", map[string]any{"owner": "o", "repo": "r", "issue_number": 7}, action.Notify},
		{"mcp__github__list_pull_requests", map[string]any{"owner": "o", "repo": "r", "state": "open"}, action.Notify},
		{"mcp__github__searchCode", map[string]any{"q": "func main"}, action.Notify},
		{"mcp__context7__get-library-docs", map[string]any{"context7CompatibleLibraryID": "/vercel/next.js"}, action.Notify},
		{"mcp__linear__list_issues", map[string]any{"filter": map[string]any{"team": "ENG", "labels": []any{"bug"}}}, action.Notify},
		// Twins that keep the default: a write in the name, anywhere; a
		// verb whose arguments say what it does; arguments that do.
		{"mcp__github__create_issue", map[string]any{"owner": "o", "repo": "r", "title": "x"}, action.Confirm},
		{"mcp__x__get_or_create_user", map[string]any{"name": "x"}, action.Confirm},
		{"mcp__x__list_and_delete", map[string]any{}, action.Confirm},
		{"mcp__db__query", map[string]any{"sql": "DROP TABLE users"}, action.Confirm},
		{"mcp__fetch__fetch", map[string]any{"url": "https://example.com/"}, action.Confirm},
		{"mcp__x__get_page", map[string]any{"url": "http://169.254.169.254/"}, action.Confirm},
		{"mcp__x__get_page", map[string]any{"target": map[string]any{"href": "http://10.0.0.1/"}}, action.Confirm},
		{"mcp__x__get_data", map[string]any{"query": "x"}, action.Confirm},
		{"mcp__x__get\u00e9", map[string]any{}, action.Confirm},
		{"mcp__x__browser_snapshot", map[string]any{}, action.Confirm},
		// Reads of secrets keep the default: what they return goes into
		// the model's context.
		{"mcp__everything__get-env", map[string]any{"message": "hello"}, action.Confirm},
		{"mcp__vault__read_secret", map[string]any{"path": "kv/app"}, action.Confirm},
		{"mcp__x__list_api_keys", map[string]any{}, action.Confirm},
		{"mcp__x__getAuthToken", map[string]any{}, action.Confirm},
	}
	for _, c := range cases {
		a := &action.Action{Agent: "claude-code", Tool: c.tool, Kind: action.KindMCP, Args: c.args}
		if v := on.Evaluate(context.Background(), a); v.Level != c.want {
			t.Errorf("%s %v: %s, want %s (%s)", c.tool, c.args, v.Level, c.want, v.Summary())
		}
		a = &action.Action{Agent: "claude-code", Tool: c.tool, Kind: action.KindMCP, Args: c.args}
		if v := ignoring.Evaluate(context.Background(), a); v.Level != action.Confirm {
			t.Errorf("ignore_names: %s: %s, want confirm", c.tool, v.Level)
		}
	}
}

// FuzzReadNames: the name classification never panics, never classifies a
// name with a writing word, and needs a reading first word.
func FuzzReadNames(f *testing.F) {
	for _, s := range []string{"mcp__github__get_issue", "mcp__x__getOrCreate", "list-and-delete", "mcp__a__b__c", "get", "GET_ITEMS", "get__"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		a := &action.Action{Agent: "claude-code", Tool: name, Kind: action.KindMCP, Args: map[string]any{}}
		g, _ := mcpguard.New(mcpguard.Config{})
		fs, err := g.Check(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) > 0 && fs[0].Check == "mcp.read-name" {
			tool := name
			if i := strings.LastIndex(name, "__"); i >= 0 {
				tool = name[i+2:]
			}
			low := "_" + strings.NewReplacer("-", "_", ".", "_", " ", "_").Replace(strings.ToLower(tool)) + "_"
			for _, w := range []string{"delete", "create", "write", "update", "remove", "exec", "send"} {
				if strings.Contains(low, "_"+w+"_") {
					t.Fatalf("%q classified as read-only", name)
				}
			}
			read := false
			for _, v := range []string{"get", "list", "search", "read", "find", "describe", "show", "view", "lookup", "resolve", "inspect", "count", "explain", "retrieve", "peek", "whoami", "stat", "glob", "grep", "ls", "cat", "info", "tree"} {
				read = read || strings.HasPrefix(strings.TrimLeft(strings.ToLower(tool), "_-."), v)
			}
			if !read {
				t.Fatalf("%q classified as read-only without a reading first word", name)
			}
		}
	})
}

// A read of a server's own data the gateway makes (prompts/get, a
// resource) is classified read-only through the engine; a forged, moved or
// stale read note never lowers a level.
func TestServerReadNote(t *testing.T) {
	g, _ := mcpguard.New(mcpguard.Config{})
	eng, err := firewall.New(context.Background(), firewall.Config{Policy: policy.Builtin(), Guards: []guard.Guard{g}})
	if err != nil {
		t.Fatal(err)
	}
	a := call(action.KindMCP)
	mcpguard.MarkServerRead(a, "prompts/get")
	if v := eng.Evaluate(context.Background(), a); v.Level != action.Auto || v.Decider == nil || v.Decider.Name != "mcp.server-read" {
		t.Fatalf("a sealed read: %s (%s)", v.Level, v.Summary())
	}
	if v := eng.Evaluate(context.Background(), call(action.KindMCP)); v.Level != action.Confirm {
		t.Fatalf("no note: %s, want the mcp default", v.Level)
	}
	for name, mk := range map[string]func() *action.Action{
		"forged": func() *action.Action {
			a := call(action.KindMCP)
			a.Facts.Notes = []string{mcpguard.NoteServerRead + "prompts/get sig=00"}
			return a
		},
		"no seal": func() *action.Action {
			a := call(action.KindMCP)
			a.Facts.Notes = []string{mcpguard.NoteServerRead + "prompts/get"}
			return a
		},
		"arguments changed": func() *action.Action {
			a := call(action.KindMCP)
			mcpguard.MarkServerRead(a, "prompts/get")
			a.Args["path"] = "/etc/shadow"
			return a
		},
		"an annotations seal passed off as a read": func() *action.Action {
			a := call(action.KindMCP)
			mcpguard.Annotate(a, mcpguard.Annotations{ReadOnly: true})
			_, sig, _ := mcpguard.ParseNote(a.Facts.Notes[0])
			a.Facts.Notes = []string{mcpguard.NoteServerRead + `{"read_only":true} sig=` + sig}
			return a
		},
	} {
		fs, err := g.Check(context.Background(), mk())
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 1 || fs[0].Check != "mcp.unsealed-annotations" || !fs[0].Hard || fs[0].Level < action.Confirm {
			t.Fatalf("%s: findings %+v, want one hard confirm", name, fs)
		}
	}
}
