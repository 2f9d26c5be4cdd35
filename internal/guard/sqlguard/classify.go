package sqlguard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Class is the effect class of SQL text. The zero value is Unknown, which is
// never treated as a read.
type Class uint8

const (
	// Unknown: the text could not be judged (unparseable, empty, too large,
	// dynamic SQL, or a construct the classifier does not know).
	Unknown Class = iota
	// Read: exactly one statement that only reads (SELECT, WITH … SELECT,
	// VALUES, TABLE, SHOW, EXPLAIN without ANALYZE, EXPLAIN ANALYZE of a read).
	Read
	// Write: changes rows or sequences, or locks rows (INSERT, UPDATE,
	// DELETE, MERGE, COPY FROM, SELECT … FOR UPDATE, nextval, ...).
	Write
	// DDL: changes the schema or other database objects (CREATE, ALTER,
	// DROP, TRUNCATE, GRANT, SELECT … INTO, ...).
	DDL
	// Admin: changes the session or the server, runs code, or reaches the
	// server's files (SET, LOCK, CALL, DO, VACUUM, transaction control,
	// pg_terminate_backend, set_config, pg_read_file, ...).
	Admin
	// Multiple: more than one statement.
	Multiple
)

var classNames = [...]string{"unknown", "read", "write", "ddl", "admin", "multiple"}

// String returns the class's lower-case name, the value of
// action.Facts.SQLClass.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// severity orders classes for combining the effects found in one statement.
func (c Class) severity() int {
	switch c {
	case Read:
		return 0
	case Write:
		return 1
	case Admin:
		return 2
	case DDL:
		return 3
	default: // Unknown, Multiple, out of range
		return 4
	}
}

// Analysis is what Analyze found in SQL text.
type Analysis struct {
	// Class is the text's class; Multiple when there is more than one
	// statement.
	Class Class
	// Strictest is the strictest class of any single statement (equal to
	// Class for one statement).
	Strictest Class
	// Statements are the top-level statement kinds in order, e.g. "SELECT",
	// "DELETE", "CREATE TABLE".
	Statements []string
	// Tables are the tables and views referenced anywhere, as written
	// ("users", "public.users"), without CTE names; sorted, unique.
	Tables []string
	// Reasons say why the text is not a read, e.g. "DELETE inside a
	// WITH query"; empty for reads.
	Reasons []string
}

// Classify returns the class of sql. An error (unparseable, empty, too large,
// parser failure) comes with Unknown: such text is never Read.
func Classify(sql string) (Class, error) {
	a, err := Analyze(sql)
	return a.Class, err
}

// Analyze parses sql with the PostgreSQL parser and walks the tree. On error
// the class is Unknown and the error wraps ErrEmpty, ErrParse, ErrTooLarge,
// ErrEncoding or ErrParser.
func Analyze(sql string) (Analysis, error) {
	tree, err := parseTree(sql)
	if err != nil {
		return Analysis{Class: Unknown, Strictest: Unknown, Reasons: []string{err.Error()}}, err
	}
	return analyzeTree(tree), nil
}

func analyzeTree(tree *parseResult) Analysis {
	var out Analysis
	tables := map[string]bool{}
	out.Strictest = Read
	for _, s := range tree.Stmts {
		w := &walker{tables: tables, class: Read}
		typ, body, ok := asNode(s.Stmt)
		if !ok {
			w.effect(Unknown, "statement without a recognisable tree")
			out.Statements = append(out.Statements, "?")
		} else {
			out.Statements = append(out.Statements, stmtKeyword(typ))
			w.node(typ, body)
		}
		if w.class.severity() > out.Strictest.severity() {
			out.Strictest = w.class
		}
		out.Reasons = append(out.Reasons, w.reasons...)
	}
	out.Class = out.Strictest
	if len(tree.Stmts) > 1 {
		out.Class = Multiple
		out.Reasons = append([]string{fmt.Sprintf("%d statements (%s); only one is allowed", len(tree.Stmts), strings.Join(out.Statements, ", "))}, out.Reasons...)
	}
	for t := range tables {
		out.Tables = append(out.Tables, t)
	}
	slices.Sort(out.Tables)
	out.Reasons = slices.Compact(out.Reasons)
	return out
}

// walker walks one statement's tree.
type walker struct {
	class   Class
	reasons []string
	tables  map[string]bool
	// scopes are the CTE names visible at the current point.
	scopes [][]string
	// inStmt counts the non-SELECT statements being walked; inside one, the
	// statement's class already says what it does and unknown constructs are
	// not reported again.
	inStmt int
	// plain counts plain EXPLAINs (no ANALYZE) being walked: what they show
	// is planned, not run, so only function calls count.
	plain int
	depth int
}

// maxDepth bounds the walk; deeper trees are not judged.
const maxDepth = 2000

func (w *walker) effect(c Class, why string) {
	if w.plain > 0 && c != Unknown {
		return
	}
	w.forceEffect(c, why)
}

func (w *walker) forceEffect(c Class, why string) {
	if c.severity() > w.class.severity() {
		w.class = c
	}
	if c != Read {
		w.reasons = append(w.reasons, why)
	}
}

// asNode reports whether m is a node: a single key naming its type (which
// starts with an upper-case letter) mapped to the node's fields.
func asNode(m map[string]any) (string, map[string]any, bool) {
	if len(m) != 1 {
		return "", nil, false
	}
	for k, v := range m {
		body, ok := v.(map[string]any)
		if !ok || k == "" || !unicode.IsUpper(rune(k[0])) {
			return "", nil, false
		}
		return k, body, true
	}
	return "", nil, false
}

func (w *walker) walk(v any) {
	w.depth++
	defer func() { w.depth-- }()
	if w.depth > maxDepth {
		w.forceEffect(Unknown, "statement nested too deeply to judge")
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if typ, body, ok := asNode(x); ok {
			w.node(typ, body)
			return
		}
		w.body(x)
	case []any:
		for _, e := range x {
			w.walk(e)
		}
	}
}

// node judges one node and walks into it.
func (w *walker) node(typ string, body map[string]any) {
	switch {
	case typ == "SelectStmt":
		// Judged by its fields in body.
	case typ == "ExplainStmt":
		if explainAnalyze(body["options"]) {
			w.body(body)
		} else {
			w.plain++
			w.body(body)
			w.plain--
		}
		return
	case typ == "FuncCall":
		w.funcCall(body)
	case typ == "LockingClause":
		w.effect(Write, "FOR UPDATE/SHARE locks rows")
	case readNodes[typ]:
	case strings.HasSuffix(typ, "Stmt"):
		kw := stmtKeyword(typ)
		c := stmtClass(typ, body)
		if w.depth > 0 {
			w.effect(c, kw+" inside another statement")
		} else {
			w.effect(c, kw+" statement")
		}
		w.inStmt++
		w.body(body)
		w.inStmt--
		return
	default:
		if w.inStmt == 0 && w.plain == 0 {
			w.effect(Unknown, "construct "+typ+" is not known to be read-only")
		}
	}
	w.body(body)
}

// body walks the fields of a node (or of a struct held directly in a
// field), in a fixed order so that reasons come out the same every time.
func (w *walker) body(m map[string]any) {
	if rel, ok := m["relname"].(string); ok {
		w.table(m, rel)
	}
	if _, ok := m["intoClause"]; ok {
		w.effect(DDL, "SELECT … INTO creates a table")
	}
	if wc, ok := m["withClause"].(map[string]any); ok {
		w.with(wc, m)
		return
	}
	w.fields(m, "")
}

func (w *walker) fields(m map[string]any, skip string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != skip {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		w.walk(m[k])
	}
}

// with walks a statement that has a WITH clause, keeping CTE names in scope
// where SQL makes them visible: in a non-recursive WITH, each query sees the
// ones before it; in WITH RECURSIVE, every query sees all of them.
func (w *walker) with(wc, stmt map[string]any) {
	ctes, _ := wc["ctes"].([]any)
	recursive, _ := wc["recursive"].(bool)
	var names []string
	for _, c := range ctes {
		if m, ok := c.(map[string]any); ok {
			if _, body, ok := asNode(m); ok {
				if n, ok := body["ctename"].(string); ok {
					names = append(names, n)
				}
			}
		}
	}
	base := len(w.scopes)
	if recursive {
		w.scopes = append(w.scopes, names)
		w.walk(ctes)
	} else {
		for i, c := range ctes {
			w.scopes = append(w.scopes[:base], names[:min(i, len(names))])
			w.walk(c)
		}
		w.scopes = append(w.scopes[:base], names)
	}
	for k, v := range wc {
		if k != "ctes" {
			w.walk(v)
		}
	}
	w.fields(stmt, "withClause")
	w.scopes = w.scopes[:base]
}

// table records a table reference unless it names a CTE in scope.
func (w *walker) table(m map[string]any, rel string) {
	schema, _ := m["schemaname"].(string)
	catalog, _ := m["catalogname"].(string)
	if schema == "" && catalog == "" {
		for _, s := range w.scopes {
			if slices.Contains(s, rel) {
				return
			}
		}
	}
	name := rel
	if schema != "" {
		name = schema + "." + name
	}
	if catalog != "" {
		name = catalog + "." + name
	}
	w.tables[name] = true
}

// funcCall judges a function call by its (unqualified, lower-cased) name.
func (w *walker) funcCall(body map[string]any) {
	name := funcName(body["funcname"])
	if name == "" {
		w.forceEffect(Unknown, "function call without a readable name")
		return
	}
	c, why := funcClass(name)
	if c != Read {
		// Function calls count even inside a plain EXPLAIN, whose planning
		// may evaluate them.
		w.forceEffect(c, fmt.Sprintf("function %s %s", name, why))
	}
}

func funcName(v any) string {
	list, _ := v.([]any)
	if len(list) == 0 {
		return ""
	}
	m, _ := list[len(list)-1].(map[string]any)
	_, body, ok := asNode(m)
	if !ok {
		return ""
	}
	s, _ := body["sval"].(string)
	return strings.ToLower(s)
}

// explainAnalyze reports whether EXPLAIN options turn ANALYZE on; anything
// but an explicit false/off/0 counts as on.
func explainAnalyze(v any) bool {
	opts, _ := v.([]any)
	for _, o := range opts {
		m, _ := o.(map[string]any)
		typ, body, ok := asNode(m)
		if !ok || typ != "DefElem" {
			continue
		}
		if name, _ := body["defname"].(string); !strings.EqualFold(name, "analyze") {
			continue
		}
		arg, hasArg := body["arg"].(map[string]any)
		if !hasArg {
			return true
		}
		if !isFalse(arg) {
			return true
		}
	}
	return false
}

// isFalse reports whether a DefElem argument is an explicit false.
func isFalse(arg map[string]any) bool {
	typ, body, ok := asNode(arg)
	if !ok {
		return false
	}
	switch typ {
	case "String":
		s, _ := body["sval"].(string)
		switch strings.ToLower(s) {
		case "false", "off", "0", "no":
			return true
		}
	case "Boolean":
		b, _ := body["boolval"].(bool)
		return !b
	case "Integer":
		n, ok := body["ival"].(json.Number)
		return !ok || n.String() == "0"
	}
	return false
}

// readNodes are the node types that may appear in a read-only query. Any
// other type outside a write or DDL statement makes the text Unknown.
var readNodes = setOf(
	"ResTarget", "ColumnRef", "A_Star", "A_Const", "A_Expr", "A_Indirection", "A_Indices", "A_ArrayExpr",
	"String", "Integer", "Float", "Boolean", "BitString", "List",
	"TypeCast", "TypeName", "CollateClause", "SQLValueFunction", "SortBy", "SubLink", "RowExpr",
	"CaseExpr", "CaseWhen", "CoalesceExpr", "MinMaxExpr", "NullTest", "BooleanTest", "BoolExpr",
	"NamedArgExpr", "ParamRef", "GroupingSet", "GroupingFunc", "WindowDef",
	"RangeVar", "RangeSubselect", "RangeFunction", "RangeTableSample", "RangeTableFunc", "RangeTableFuncCol",
	"JoinExpr", "Alias", "CommonTableExpr", "WithClause", "CTESearchClause", "CTECycleClause",
	"XmlExpr", "XmlSerialize", "DefElem", "VariableShowStmt",
	"JsonFormat", "JsonReturning", "JsonValueExpr", "JsonOutput", "JsonArgument", "JsonBehavior",
	"JsonFuncExpr", "JsonTablePathSpec", "JsonTable", "JsonTableColumn", "JsonKeyValue", "JsonParseExpr",
	"JsonScalarExpr", "JsonSerializeExpr", "JsonObjectConstructor", "JsonArrayConstructor",
	"JsonArrayQueryConstructor", "JsonAggConstructor", "JsonObjectAgg", "JsonArrayAgg", "JsonIsPredicate",
)

func setOf(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// writeStmts and adminStmts classify statements; every other statement
// type is DDL.
var (
	writeStmts = setOf("InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt")
	adminStmts = setOf("VariableSetStmt", "LockStmt", "TransactionStmt", "DoStmt", "CallStmt",
		"PrepareStmt", "ExecuteStmt", "DeallocateStmt", "DiscardStmt", "ListenStmt", "UnlistenStmt",
		"NotifyStmt", "CheckPointStmt", "VacuumStmt", "LoadStmt", "ClusterStmt", "ReindexStmt",
		"DeclareCursorStmt", "FetchStmt", "ClosePortalStmt", "ConstraintsSetStmt", "AlterSystemStmt",
		"PlassignStmt", "ReturnStmt")
)

func stmtClass(typ string, body map[string]any) Class {
	switch {
	case writeStmts[typ]:
		return Write
	case typ == "CopyStmt":
		if from, _ := body["is_from"].(bool); from {
			return Write
		}
		return Admin
	case adminStmts[typ]:
		return Admin
	default:
		return DDL
	}
}

// stmtKeywords name statement types whose type name does not read as SQL.
var stmtKeywords = map[string]string{
	"SelectStmt":         "SELECT",
	"VariableSetStmt":    "SET",
	"VariableShowStmt":   "SHOW",
	"TransactionStmt":    "TRANSACTION CONTROL",
	"CreateStmt":         "CREATE TABLE",
	"IndexStmt":          "CREATE INDEX",
	"ViewStmt":           "CREATE VIEW",
	"RuleStmt":           "CREATE RULE",
	"CreatedbStmt":       "CREATE DATABASE",
	"DropdbStmt":         "DROP DATABASE",
	"CreateTrigStmt":     "CREATE TRIGGER",
	"CreateSeqStmt":      "CREATE SEQUENCE",
	"AlterSeqStmt":       "ALTER SEQUENCE",
	"RenameStmt":         "ALTER … RENAME",
	"DefineStmt":         "CREATE (aggregate, operator or type)",
	"CheckPointStmt":     "CHECKPOINT",
	"DeclareCursorStmt":  "DECLARE CURSOR",
	"ClosePortalStmt":    "CLOSE",
	"RefreshMatViewStmt": "REFRESH MATERIALIZED VIEW",
	"CreateTableAsStmt":  "CREATE TABLE AS",
	"GrantRoleStmt":      "GRANT ROLE",
	"CreatePlangStmt":    "CREATE LANGUAGE",
	"CreateFdwStmt":      "CREATE FOREIGN DATA WRAPPER",
	"PlassignStmt":       "ASSIGN",
}

// stmtKeyword turns a statement type name into SQL words: "AlterTableStmt"
// becomes "ALTER TABLE".
func stmtKeyword(typ string) string {
	if kw, ok := stmtKeywords[typ]; ok {
		return kw
	}
	name := strings.TrimSuffix(typ, "Stmt")
	var b strings.Builder
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}
