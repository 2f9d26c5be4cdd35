package sqlguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	pgparser "github.com/overseer-dev/overseer/internal/guard/sqlguard/pgquery"
)

// MaxSQLBytes is the largest statement text the classifier parses. Longer
// text is never classified as a read.
const MaxSQLBytes = 1 << 20

// Sentinel errors of the classifier.
var (
	// ErrEmpty means the text holds no statement (only blanks or comments).
	ErrEmpty = errors.New("sqlguard: no SQL statement")
	// ErrParse means the PostgreSQL parser rejected the text.
	ErrParse = errors.New("sqlguard: SQL does not parse")
	// ErrTooLarge means the text is longer than MaxSQLBytes.
	ErrTooLarge = errors.New("sqlguard: SQL text too large")
	// ErrEncoding means the text has a NUL byte or is not valid UTF-8; the
	// parser and the database could read such text differently.
	ErrEncoding = errors.New("sqlguard: SQL text has a NUL byte or invalid UTF-8")
	// ErrParser means the parser itself failed (it could not be loaded or it
	// trapped); the text is not judged.
	ErrParser = errors.New("sqlguard: SQL parser failed")
)

// parserMu serialises calls into the parser. The parser is PostgreSQL's own,
// compiled to WebAssembly; it is instantiated on first use (that call pays
// the load) and every later call reuses the one instance, which a mutex keeps
// from being multiplied by concurrent callers.
var parserMu sync.Mutex

// Warm loads the parser now, so that the first classification does not pay
// for it. It is safe to call from a goroutine at start-up.
func Warm() error {
	_, err := parseTree("SELECT 1")
	return err
}

// parseResult is the decoded parse tree: the statements, each a node.
type parseResult struct {
	Stmts []rawStmt `json:"stmts"`
}

type rawStmt struct {
	Stmt     map[string]any `json:"stmt"`
	Location int            `json:"stmt_location"`
	Len      int            `json:"stmt_len"`
}

// parseTree parses sql with the PostgreSQL parser into its JSON tree.
func parseTree(sql string) (*parseResult, error) {
	if len(sql) > MaxSQLBytes {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, len(sql), MaxSQLBytes)
	}
	if strings.IndexByte(sql, 0) >= 0 || !utf8.ValidString(sql) {
		return nil, ErrEncoding
	}
	js, err := callParser(sql)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(js)))
	dec.UseNumber()
	var res parseResult
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("%w: decoding the parse tree: %v", ErrParser, err)
	}
	if len(res.Stmts) == 0 {
		return nil, ErrEmpty
	}
	for i, s := range res.Stmts {
		if s.Stmt == nil {
			return nil, fmt.Errorf("%w: statement %d has no tree", ErrParser, i+1)
		}
	}
	return &res, nil
}

// callParser checks that sql is shallow enough for the parser (see
// depthBound) and parses it, turning the parser's panics (a failed load, a
// trap) into ErrParser.
func callParser(sql string) (js string, err error) {
	parserMu.Lock()
	defer parserMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			js, err = "", fmt.Errorf("%w: %v", ErrParser, r)
		}
	}()
	pb, err := pgparser.ScanToProtobuf(sql)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrParse, err)
	}
	kinds, err := scanKinds(pb)
	if err != nil {
		if errors.Is(err, ErrTooComplex) {
			return "", err
		}
		return "", fmt.Errorf("%w: decoding the scanner's tokens: %v", ErrParser, err)
	}
	if d := depthBound(kinds); d > maxComplexity {
		return "", fmt.Errorf("%w: nesting bound %d exceeds %d", ErrTooComplex, d, maxComplexity)
	}
	js, err = pgparser.ParseToJSON(sql)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrParse, err)
	}
	return js, nil
}

// text returns the statement's own text within sql.
func (s rawStmt) text(sql string) string {
	start := s.Location
	if start < 0 || start > len(sql) {
		start = 0
	}
	end := len(sql)
	if s.Len > 0 && start+s.Len <= len(sql) {
		end = start + s.Len
	}
	return sql[start:end]
}
