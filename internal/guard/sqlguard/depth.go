package sqlguard

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// The parser is C code compiled to WebAssembly with a small, fixed stack.
// Its recursive parts (tree building and output) use stack in proportion to
// the depth of the parse tree, and a tree deep enough overruns the stack
// and corrupts the parser's memory: later results could be wrong. So no text
// reaches the parser unless a bound on its tree depth, computed from the
// tokens of PostgreSQL's own (non-recursive) scanner, is well below what the
// stack holds.

// ErrTooComplex means the text nests too deeply to be parsed safely.
var ErrTooComplex = errors.New("sqlguard: SQL nests too deeply or is too long to judge")

const (
	// maxComplexity bounds depthBound. Probing nested constructs one by one
	// (depth_test.go), the smallest bound at which the parser overran its
	// stack was 660 (a chain of 655 unary operators); this leaves a margin
	// of more than three.
	maxComplexity = 200
	// parenWeight is what each level of parentheses or brackets adds to the
	// bound, over and above its tokens: a sub-query adds several tree levels
	// for its two tokens.
	parenWeight = 4
	// maxTokens bounds the number of tokens of the whole text.
	maxTokens = 100_000
)

// Token kinds of the scanner's output (pg_query's Token enum).
const (
	tokOpenParen    = 40 // (
	tokCloseParen   = 41 // )
	tokComma        = 44 // ,
	tokSemicolon    = 59 // ;
	tokOpenBracket  = 91 // [
	tokCloseBracket = 93 // ]
	tokDot          = 46 // .
	tokIdent        = 258
	tokXConst       = 264 // IDENT, UIDENT, FCONST, SCONST, USCONST, BCONST, XCONST
	tokIConst       = 266
	tokParam        = 267
	tokSQLComment   = 275
	tokCComment     = 276
	tokAnd          = 292
	tokOr           = 570
)

// isLeaf reports whether a token kind is a name, a constant, a parameter or
// a dot: these never deepen a tree by themselves (a chain needs an operator
// or keyword between its links), so the bound does not count them.
func isLeaf(k int32) bool {
	return k >= tokIdent && k <= tokXConst || k == tokIConst || k == tokParam || k == tokDot
}

// scanKinds decodes the scanner's protobuf output (ScanResult: field 2,
// repeated ScanToken; ScanToken: field 4, the token kind) into token kinds,
// comments left out.
func scanKinds(pb []byte) ([]int32, error) {
	var kinds []int32
	for len(pb) > 0 {
		num, typ, n := protowire.ConsumeTag(pb)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		pb = pb[n:]
		if num != 2 || typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, pb)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			pb = pb[n:]
			continue
		}
		tok, n := protowire.ConsumeBytes(pb)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		pb = pb[n:]
		kind, err := tokenKind(tok)
		if err != nil {
			return nil, err
		}
		if kind != tokSQLComment && kind != tokCComment {
			kinds = append(kinds, kind)
		}
		if len(kinds) > maxTokens {
			return nil, fmt.Errorf("%w: more than %d tokens", ErrTooComplex, maxTokens)
		}
	}
	return kinds, nil
}

func tokenKind(b []byte) (int32, error) {
	var kind int32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		b = b[n:]
		if num == 4 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, protowire.ParseError(n)
			}
			kind = int32(v)
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return kind, nil
}

// depthBound bounds the parse tree depth of the statement with the most
// deeply nested tree, in units of tokens. Commas, AND and OR separate
// siblings, so an
// item (the tokens between commas at one level of parentheses) costs its
// count of operators and keywords (see isLeaf) plus the cost of its deepest
// parenthesised part, and each level of parentheses adds parenWeight.
// Operators and keywords that do not deepen the tree are counted too, which
// only makes the bound larger.
func depthBound(kinds []int32) int {
	type level struct {
		item     int // tokens of the current item
		maxChild int // cost of the deepest parenthesised part of the item
		best     int // cost of the costliest finished item
	}
	stack := []level{{}}
	worst := 0
	endItem := func(l *level) {
		if c := l.item + l.maxChild; c > l.best {
			l.best = c
		}
		l.item, l.maxChild = 0, 0
	}
	closeLevels := func(to int) {
		for len(stack) > to {
			top := &stack[len(stack)-1]
			endItem(top)
			cost := top.best + parenWeight
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				if cost > worst {
					worst = cost
				}
				return
			}
			if parent := &stack[len(stack)-1]; cost > parent.maxChild {
				parent.maxChild = cost
			}
		}
	}
	for _, k := range kinds {
		switch k {
		case tokOpenParen, tokOpenBracket:
			stack[len(stack)-1].item++
			stack = append(stack, level{})
		case tokCloseParen, tokCloseBracket:
			if len(stack) > 1 {
				closeLevels(len(stack) - 1)
			}
			stack[len(stack)-1].item++
		case tokComma, tokAnd, tokOr:
			// Siblings: PostgreSQL flattens a AND b AND c (and OR chains)
			// into one node; AND also closes a BETWEEN, which cannot chain.
			endItem(&stack[len(stack)-1])
		case tokSemicolon:
			closeLevels(0)
			stack = []level{{}}
		default:
			if !isLeaf(k) {
				stack[len(stack)-1].item++
			}
		}
	}
	closeLevels(0)
	return worst
}
