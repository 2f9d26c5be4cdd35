package sqlguard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

func findingBy(fs []guard.Finding, check string) (guard.Finding, bool) {
	for _, f := range fs {
		if f.Check == check {
			return f, true
		}
	}
	return guard.Finding{}, false
}

func TestGuardCheck(t *testing.T) {
	type want struct {
		check string
		level action.Level
		hard  bool
	}
	tests := []struct {
		name  string
		pol   Policy
		tool  string
		kind  action.Kind
		args  map[string]any
		class string
		wants []want // findings that must be present
		none  []string
	}{
		{"query read", Policy{}, "sql_query", action.KindSQL, map[string]any{"sql": "SELECT * FROM users"}, "read",
			[]want{{"sql.class", action.Auto, false}}, []string{"sql.read-only", "sql.tables"}},
		{"query argument name", Policy{}, "sql_query", action.KindSQL, map[string]any{"query": "SELECT 1"}, "read",
			[]want{{"sql.class", action.Auto, false}}, []string{"sql.read-only"}},
		// A tool that runs "query" must not be judged by a harmless "sql".
		{"two sql texts", Policy{}, "db__run", action.KindSQL, map[string]any{"sql": "SELECT 1", "query": "DROP TABLE users"}, "unknown",
			[]want{{"sql.class", action.Approve, false}}, nil},
		{"two sql texts read-only", Policy{}, "sql_query", action.KindSQL, map[string]any{"sql": "SELECT 1", "query": "DELETE FROM users"}, "unknown",
			[]want{{"sql.read-only", action.Block, true}}, nil},
		{"the same sql twice", Policy{}, "db__run", action.KindSQL, map[string]any{"sql": "SELECT 1", "query": "SELECT 1"}, "read",
			[]want{{"sql.class", action.Auto, false}}, nil},
		{"query write blocked", Policy{}, "sql_query", action.KindSQL, map[string]any{"sql": "DELETE FROM users"}, "write",
			[]want{{"sql.read-only", action.Block, true}}, nil},
		{"query cte write blocked", Policy{}, "sql_query", action.KindSQL, map[string]any{"sql": "WITH x AS (DELETE FROM users RETURNING *) SELECT * FROM x"}, "write",
			[]want{{"sql.read-only", action.Block, true}}, nil},
		{"query second statement blocked", Policy{}, "SQL_Query", action.KindSQL, map[string]any{"sql": "SELECT 1; DROP TABLE users"}, "multiple",
			[]want{{"sql.read-only", action.Block, true}, {"sql.class", action.Approve, false}}, nil},
		{"query unparseable blocked", Policy{}, "sql_query", action.KindSQL, map[string]any{"sql": "SELEC 1"}, "unknown",
			[]want{{"sql.read-only", action.Block, true}}, nil},
		{"query missing sql blocked", Policy{}, "sql_query", action.KindSQL, map[string]any{"table": "users"}, "unknown",
			[]want{{"sql.read-only", action.Block, true}}, nil},
		{"query sql not a string", Policy{}, "sql_query", action.KindSQL, map[string]any{"sql": 42}, "unknown",
			[]want{{"sql.read-only", action.Block, true}}, nil},
		{"configured read-only tool", Policy{ReadOnlyTools: []string{"mcp__pg__query"}}, "mcp__pg__query", action.KindSQL, map[string]any{"sql": "UPDATE t SET a = 1"}, "write",
			[]want{{"sql.read-only", action.Block, true}}, nil},
		{"exec read auto", Policy{}, "sql_exec", action.KindSQL, map[string]any{"sql": "SELECT 1"}, "read",
			[]want{{"sql.class", action.Auto, false}}, []string{"sql.read-only"}},
		{"exec write confirm", Policy{}, "sql_exec", action.KindSQL, map[string]any{"sql": "UPDATE users SET a = 1 WHERE id = 2"}, "write",
			[]want{{"sql.class", action.Confirm, false}}, []string{"sql.read-only"}},
		{"exec ddl approve", Policy{}, "sql_exec", action.KindSQL, map[string]any{"sql": "DROP TABLE users"}, "ddl",
			[]want{{"sql.class", action.Approve, false}}, []string{"sql.read-only"}},
		{"exec admin approve", Policy{}, "sql_exec", action.KindSQL, map[string]any{"sql": "SET search_path = x"}, "admin",
			[]want{{"sql.class", action.Approve, false}}, nil},
		{"exec multiple approve", Policy{}, "sql_exec", action.KindSQL, map[string]any{"sql": "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)"}, "multiple",
			[]want{{"sql.class", action.Approve, false}}, nil},
		{"exec unparseable approve", Policy{}, "sql_exec", action.KindSQL, map[string]any{"sql": "PRAGMA foo"}, "unknown",
			[]want{{"sql.class", action.Approve, false}}, nil},
		{"tables allowed", Policy{Tables: []string{"users", "public.orders"}}, "sql_query", action.KindSQL,
			map[string]any{"sql": "SELECT * FROM users JOIN public.orders o ON true"}, "read",
			[]want{{"sql.class", action.Auto, false}}, []string{"sql.tables"}},
		{"table outside list", Policy{Tables: []string{"users"}}, "sql_query", action.KindSQL,
			map[string]any{"sql": "SELECT * FROM users, secrets"}, "read",
			[]want{{"sql.tables", action.Block, true}}, []string{"sql.read-only"}},
		{"qualified name needs its own entry", Policy{Tables: []string{"users"}}, "sql_query", action.KindSQL,
			map[string]any{"sql": "SELECT * FROM public.users"}, "read",
			[]want{{"sql.tables", action.Block, true}}, nil},
		{"schema wildcard", Policy{Tables: []string{"audit.*"}}, "sql_query", action.KindSQL,
			map[string]any{"sql": "SELECT * FROM audit.log JOIN audit.users ON true"}, "read",
			nil, []string{"sql.tables"}},
		{"schema wildcard does not cover unqualified", Policy{Tables: []string{"audit.*"}}, "sql_query", action.KindSQL,
			map[string]any{"sql": "SELECT * FROM log"}, "read",
			[]want{{"sql.tables", action.Block, true}}, nil},
		{"cte name is not a table", Policy{Tables: []string{"users"}}, "sql_query", action.KindSQL,
			map[string]any{"sql": "WITH secrets AS (SELECT * FROM users) SELECT * FROM secrets"}, "read",
			nil, []string{"sql.tables"}},
		{"cte shadow trick", Policy{Tables: []string{"users"}}, "sql_query", action.KindSQL,
			map[string]any{"sql": "SELECT * FROM secrets UNION ALL (WITH secrets AS (SELECT * FROM users) SELECT * FROM secrets)"}, "read",
			[]want{{"sql.tables", action.Block, true}}, nil},
		{"write to listed table", Policy{Tables: []string{"users"}}, "sql_exec", action.KindSQL,
			map[string]any{"sql": "UPDATE users SET a = 1"}, "write",
			[]want{{"sql.class", action.Confirm, false}}, []string{"sql.tables"}},
		{"ddl with a list", Policy{Tables: []string{"users"}}, "sql_exec", action.KindSQL,
			map[string]any{"sql": "DROP TABLE users"}, "ddl",
			[]want{{"sql.tables", action.Block, true}}, nil},
		{"unparseable with a list", Policy{Tables: []string{"users"}}, "sql_exec", action.KindSQL,
			map[string]any{"sql": "SELECT * FROM `users`"}, "unknown",
			[]want{{"sql.tables", action.Block, true}}, nil},
		{"kind inferred", Policy{}, "sql_query", "", map[string]any{"sql": "TRUNCATE users"}, "ddl",
			[]want{{"sql.read-only", action.Block, true}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &action.Action{Tool: tt.tool, Kind: tt.kind, Args: tt.args}
			fs, err := New(tt.pol).Check(context.Background(), a)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if a.Facts.SQLClass != tt.class {
				t.Errorf("SQLClass = %q, want %q", a.Facts.SQLClass, tt.class)
			}
			for _, w := range tt.wants {
				f, ok := findingBy(fs, w.check)
				if !ok {
					t.Fatalf("no %s finding in %+v", w.check, fs)
				}
				if f.Level != w.level || f.Hard != w.hard || f.Message == "" || f.Preview == nil {
					t.Fatalf("%s = %+v, want level %s hard %v with message and preview", w.check, f, w.level, w.hard)
				}
			}
			for _, c := range tt.none {
				if f, ok := findingBy(fs, c); ok {
					t.Fatalf("unexpected finding %+v", f)
				}
			}
		})
	}
}

func TestGuardIgnoresOtherKinds(t *testing.T) {
	a := &action.Action{Tool: "Bash", Kind: action.KindShell, Args: map[string]any{"sql": "DROP TABLE users"}}
	fs, err := New(Policy{}).Check(context.Background(), a)
	if err != nil || len(fs) != 0 || a.Facts.SQLClass != "" {
		t.Fatalf("Check = %+v, %v, class %q", fs, err, a.Facts.SQLClass)
	}
}

func TestGuardReadOnlyMessageIsActionable(t *testing.T) {
	a := &action.Action{Tool: "sql_query", Kind: action.KindSQL,
		Args: map[string]any{"sql": "WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d"}}
	fs, err := New(Policy{}).Check(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := findingBy(fs, "sql.read-only")
	if !ok {
		t.Fatalf("no read-only finding: %+v", fs)
	}
	for _, want := range []string{"sql_query", "DELETE", "read-only", "a write"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	if f.Preview.Summary == "" || len(f.Preview.Items) != 1 || f.Preview.Items[0] != "table users" {
		t.Errorf("preview = %+v", f.Preview)
	}
}

func TestGuardParseErrorNoted(t *testing.T) {
	a := &action.Action{Tool: "sql_exec", Kind: action.KindSQL, Args: map[string]any{"sql": "SELEC 1"}}
	if _, err := New(Policy{}).Check(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if len(a.Facts.Notes) != 1 || !strings.Contains(a.Facts.Notes[0], "does not parse") {
		t.Fatalf("Notes = %q", a.Facts.Notes)
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name string
		pol  Policy
		ok   bool
	}{
		{"empty", Policy{}, true},
		{"tables", Policy{Tables: []string{"users", "Public.Orders", "audit.*", "t_1$x"}}, true},
		{"read-only tools", Policy{ReadOnlyTools: []string{"mcp__pg__query"}}, true},
		{"bare star", Policy{Tables: []string{"*"}}, false},
		{"three parts", Policy{Tables: []string{"a.b.c"}}, false},
		{"quoted", Policy{Tables: []string{`"users"`}}, false},
		{"empty table", Policy{Tables: []string{""}}, false},
		{"injection", Policy{Tables: []string{"users; drop"}}, false},
		{"empty tool", Policy{ReadOnlyTools: []string{" "}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.pol.Validate()
			if tt.ok != (err == nil) || (!tt.ok && !errors.Is(err, ErrPolicy)) {
				t.Fatalf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestGuardBadPolicyFailsClosed(t *testing.T) {
	g := New(Policy{Tables: []string{"a.b.c"}})
	a := &action.Action{Tool: "sql_query", Kind: action.KindSQL, Args: map[string]any{"sql": "SELECT 1"}}
	if _, err := g.Check(context.Background(), a); !errors.Is(err, ErrPolicy) {
		t.Fatalf("Check = %v, want ErrPolicy", err)
	}
	if g.Name() != "sql" {
		t.Fatalf("Name = %q", g.Name())
	}
}
