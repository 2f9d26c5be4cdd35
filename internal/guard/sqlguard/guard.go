package sqlguard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

// ErrPolicy means a Policy entry could not be understood.
var ErrPolicy = errors.New("sqlguard: invalid SQL policy")

// DefaultReadOnlyTool is the builtin read-only SQL tool. It is always
// read-only, whatever the policy says.
const DefaultReadOnlyTool = "sql_query"

// Policy is what an operator configures for the SQL guard.
type Policy struct {
	// Tables, when not empty, lists the only tables agents' SQL may touch:
	// "users" (written without a schema), "public.users" (written with that
	// schema) or "audit.*" (any table of a schema). Names are compared as
	// PostgreSQL folds unquoted names, in lower case. With a list in force,
	// schema changes and administration are blocked too, since the tables
	// they touch cannot all be known.
	Tables []string `json:"tables,omitempty" yaml:"tables,omitempty"`
	// ReadOnlyTools names further tools (besides sql_query) that may only
	// run reads, e.g. an MCP server's query tool.
	ReadOnlyTools []string `json:"read_only_tools,omitempty" yaml:"read_only_tools,omitempty"`
}

var (
	identRE      = `[a-z_][a-z0-9_$]*`
	tableEntryRE = lazyre.New(`^(` + identRE + `\.)?(` + identRE + `|\*)$`)
)

// Validate reports the first entry of p that cannot be understood.
func (p Policy) Validate() error {
	_, err := p.compile()
	return err
}

type compiled struct {
	tables   map[string]bool // "users", "public.users"
	schemas  map[string]bool // "audit" for "audit.*"
	limited  bool
	readOnly map[string]bool // lower-case tool names
}

func (p Policy) compile() (*compiled, error) {
	c := &compiled{tables: map[string]bool{}, schemas: map[string]bool{},
		readOnly: map[string]bool{DefaultReadOnlyTool: true}}
	for _, raw := range p.Tables {
		e := strings.ToLower(strings.TrimSpace(raw))
		if !tableEntryRE.MatchString(e) || e == "*" {
			return nil, fmt.Errorf("%w: table entry %q (want name, schema.name or schema.*)", ErrPolicy, raw)
		}
		if s, ok := strings.CutSuffix(e, ".*"); ok {
			c.schemas[s] = true
		} else {
			c.tables[e] = true
		}
		c.limited = true
	}
	for _, raw := range p.ReadOnlyTools {
		t := strings.ToLower(strings.TrimSpace(raw))
		if t == "" {
			return nil, fmt.Errorf("%w: empty read_only_tools entry", ErrPolicy)
		}
		c.readOnly[t] = true
	}
	return c, nil
}

// tableAllowed reports whether a table reference (as Analysis.Tables spells
// it) is on the list.
func (c *compiled) tableAllowed(name string) bool {
	if c.tables[name] {
		return true
	}
	// "schema.table" against "schema.*"; catalog-qualified names never match.
	if schema, rest, ok := strings.Cut(name, "."); ok && !strings.Contains(rest, ".") {
		return c.schemas[schema]
	}
	return false
}

// Guard checks sql actions. It is safe for concurrent use.
type Guard struct {
	pol    *compiled
	polErr error
}

var _ guard.Guard = (*Guard)(nil)

// New returns a guard for pol. A policy that does not compile (see
// Policy.Validate) makes every Check of an sql action fail, which the engine
// treats as "never auto".
func New(pol Policy) *Guard {
	c, err := pol.compile()
	return &Guard{pol: c, polErr: err}
}

// Name returns "sql".
func (g *Guard) Name() string { return "sql" }

// Check classifies the SQL of an sql action (argument "sql" or "query"),
// sets a.Facts.SQLClass, and reports:
//
//   - for a read-only tool (sql_query and Policy.ReadOnlyTools), anything
//     but a single read is a hard block ("sql.read-only");
//   - with a table list, a table outside it — or SQL whose tables cannot
//     all be known — is a hard block ("sql.tables");
//   - otherwise the class as a soft finding ("sql.class"): auto for a read,
//     confirm for a write, approve for DDL, administration, several
//     statements, or SQL that cannot be judged.
func (g *Guard) Check(_ context.Context, a *action.Action) ([]guard.Finding, error) {
	kind := a.Kind
	if kind == "" {
		kind = action.InferKind(a.Tool)
	}
	if kind != action.KindSQL {
		return nil, nil
	}
	if g.polErr != nil {
		return nil, g.polErr
	}
	tool := a.Tool
	readOnly := g.pol.readOnly[strings.ToLower(tool)]
	text, _ := a.StringArg("sql", "query")
	an, err := Analyze(text)
	if q, ok := a.Args["query"].(string); ok && text != q {
		// Two SQL texts: a tool runs one of them, and which one is the
		// tool's to say. Judging "sql" while the tool runs "query" would
		// let SELECT 1 stand for DROP TABLE.
		an, err = Analysis{Class: Unknown, Strictest: Unknown,
			Reasons: []string{"the call carries two different SQL texts (sql and query)"}}, nil
	}
	a.Facts.SQLClass = an.Class.String()
	if err != nil {
		a.Facts.Notes = append(a.Facts.Notes, "sql: "+err.Error())
	}
	preview := previewOf(an)
	var out []guard.Finding
	if readOnly && an.Class != Read {
		out = append(out, guard.Finding{
			Check: "sql.read-only",
			Level: action.Block,
			Hard:  true,
			Message: fmt.Sprintf("%s runs only a single read-only statement (SELECT, WITH … SELECT, VALUES, TABLE, SHOW, "+
				"EXPLAIN without ANALYZE); this SQL is %s: %s. Send one read-only PostgreSQL query, or use a tool "+
				"meant for changes, which a person must confirm.", tool, describe(an.Class), strings.Join(an.Reasons, "; ")),
			Preview: preview,
		})
	}
	if g.pol.limited {
		if f, ok := g.checkTables(an); ok {
			f.Preview = preview
			out = append(out, f)
		}
	}
	level := action.Approve
	switch an.Class {
	case Read:
		level = action.Auto
	case Write:
		level = action.Confirm
	}
	msg := "SQL is a single read"
	if an.Class != Read {
		msg = fmt.Sprintf("SQL is %s: %s", describe(an.Class), strings.Join(an.Reasons, "; "))
	}
	out = append(out, guard.Finding{Check: "sql.class", Level: level, Message: msg, Preview: preview})
	return out, nil
}

// checkTables reports a table-list violation, if any.
func (g *Guard) checkTables(an Analysis) (guard.Finding, bool) {
	switch an.Strictest {
	case Read, Write:
	default:
		return guard.Finding{
			Check: "sql.tables",
			Level: action.Block,
			Hard:  true,
			Message: fmt.Sprintf("a table allow-list is in force, so only reads and row changes of listed tables "+
				"are allowed; this SQL is %s: %s", describe(an.Strictest), strings.Join(an.Reasons, "; ")),
		}, true
	}
	var outside []string
	for _, t := range an.Tables {
		if !g.pol.tableAllowed(t) {
			outside = append(outside, t)
		}
	}
	if len(outside) == 0 {
		return guard.Finding{}, false
	}
	return guard.Finding{
		Check: "sql.tables",
		Level: action.Block,
		Hard:  true,
		Message: fmt.Sprintf("SQL touches %s, outside the tables agents may use; query only the listed tables "+
			"(an operator can extend the list)", strings.Join(outside, ", ")),
	}, true
}

func describe(c Class) string {
	switch c {
	case Read:
		return "a read"
	case Write:
		return "a write"
	case DDL:
		return "a schema change (DDL)"
	case Admin:
		return "session or server administration"
	case Multiple:
		return "several statements"
	default:
		return "not understood"
	}
}

func previewOf(an Analysis) *action.Preview {
	stmts := slices.Compact(slices.Clone(an.Statements))
	summary := "SQL " + an.Class.String()
	if len(stmts) > 0 {
		summary += ": " + strings.Join(stmts, ", ")
	}
	p := &action.Preview{Summary: summary}
	const maxItems = 20
	for i, t := range an.Tables {
		if i == maxItems {
			p.More = len(an.Tables) - maxItems
			break
		}
		p.Items = append(p.Items, "table "+t)
	}
	return p
}
