package memsqlite

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/overseer-dev/overseer/plugin"
)

// Caps on the terms one query is split into, so that a long query (a whole
// task goal, say) costs a bounded amount.
const (
	maxFTSTerms = 64
	maxSubTerms = 32
)

// terms is a query split for the two kinds of search.
type terms struct {
	// fts are terms of three or more runes, matched by the trigram index.
	fts []string
	// sub are shorter terms, matched as case-insensitive substrings.
	sub []string
}

// runClass is the class of a rune for splitting a query.
type runClass int

const (
	sep  runClass = iota // splits terms: spaces, punctuation, symbols, controls
	word                 // letters and digits of scripts written with spaces
	cjk                  // Han, kana and Hangul: written without spaces
)

func classify(r rune) runClass {
	switch {
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
		return cjk
	case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
		return word
	}
	return sep
}

// splitQuery splits q into terms: runs of word runes and runs of CJK runes,
// cut at every other rune and where one kind of run meets the other.
// Combining marks stay with the run they follow. Terms are lower-cased and
// unique. A CJK run longer than two runes also adds its three-rune pieces
// (for the index) and its two-rune pieces (as substrings), so that
// "运行测试的偏好" finds an item that says "偏好 … 运行测试". One-rune terms
// are kept only when the query has nothing longer.
//
// Terms hold letters, digits, marks and '_' only, and are quoted again when
// they are put into an FTS5 expression, so no query text is ever read as
// FTS5 syntax.
func splitQuery(q string) terms {
	type run struct {
		text  string
		class runClass
	}
	var runs []run
	start, cur := -1, sep
	flush := func(end int) {
		if start >= 0 {
			runs = append(runs, run{strings.ToLower(q[start:end]), cur})
		}
		start, cur = -1, sep
	}
	for i, r := range q {
		c := classify(r)
		if c == sep && start >= 0 && unicode.Is(unicode.M, r) {
			continue // a combining mark belongs to the run
		}
		if r == utf8.RuneError {
			c = sep
		}
		if c != cur {
			flush(i)
			if c != sep {
				start, cur = i, c
			}
		}
	}
	flush(len(q))

	var t terms
	seenF, seenS := map[string]bool{}, map[string]bool{}
	addF := func(s string) {
		if !seenF[s] && len(t.fts) < maxFTSTerms {
			seenF[s] = true
			t.fts = append(t.fts, s)
		}
	}
	addS := func(s string) {
		if !seenS[s] && len(t.sub) < maxSubTerms {
			seenS[s] = true
			t.sub = append(t.sub, s)
		}
	}
	var singles []string
	// Whole terms first, so that the caps drop pieces before terms.
	for _, r := range runs {
		switch n := utf8.RuneCountInString(r.text); {
		case n >= 3:
			addF(r.text)
		case n == 2:
			addS(r.text)
		default:
			singles = append(singles, r.text)
		}
	}
	for _, r := range runs {
		if r.class != cjk {
			continue
		}
		rs := []rune(r.text)
		for i := 0; len(rs) > 3 && i+3 <= len(rs); i++ {
			addF(string(rs[i : i+3]))
		}
		for i := 0; len(rs) > 2 && i+2 <= len(rs); i++ {
			addS(string(rs[i : i+2]))
		}
	}
	if len(t.fts) == 0 && len(t.sub) == 0 {
		for _, s := range singles {
			addS(s)
		}
	}
	return t
}

// ftsExpr ORs the terms, each a quoted FTS5 string (a phrase to the trigram
// tokenizer, matched as a substring).
func ftsExpr(ts []string) string {
	var b strings.Builder
	for i, s := range ts {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(s, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String()
}

// likePattern is a LIKE pattern (with ESCAPE '\') matching s anywhere.
func likePattern(s string) string {
	return "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}

// Search returns up to limit items relevant to query, best first (limit <= 0
// means DefaultLimit; it is capped at MaxLimit). An empty query, or one with
// no letters or digits, returns nothing.
//
// The query is split into terms (see splitQuery). Terms of three or more
// runes are ORed in the trigram index and ranked by BM25; shorter terms are
// looked for as substrings of content and tags and ranked by how many of
// them an item contains. Index hits come before substring-only hits; ties go
// to the newest item. Score is 1 plus the BM25 relevance for index hits and
// in (0, 0.5] (the share of substring terms found, halved) for the others.
func (m *Memory) Search(ctx context.Context, query string, limit int) ([]plugin.MemoryItem, error) {
	if err := m.check(ctx); err != nil {
		return nil, m.wrap("search", err)
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	t := splitQuery(query)
	var out []plugin.MemoryItem
	if len(t.fts) > 0 {
		items, err := m.query(ctx, `SELECT `+itemColumns+`, 1.0 - bm25(memories_fts) AS score
			FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
			WHERE memories_fts MATCH ?
			ORDER BY bm25(memories_fts), m.created_at DESC, m.id DESC
			LIMIT ?`, ftsExpr(t.fts), limit)
		if err != nil {
			return nil, m.wrap("search", err)
		}
		out = items
	}
	if len(t.sub) > 0 && len(out) < limit {
		items, err := m.substring(ctx, t.sub, limit+len(out))
		if err != nil {
			return nil, m.wrap("search", err)
		}
		seen := make(map[int64]bool, len(out))
		for _, it := range out {
			seen[it.ID] = true
		}
		for _, it := range items {
			if len(out) == limit {
				break
			}
			if !seen[it.ID] {
				out = append(out, it)
			}
		}
	}
	return slices.Clip(out), nil
}

// substring finds items whose content or tags contain any of subs
// (ASCII case-insensitively), most terms found first, then newest.
func (m *Memory) substring(ctx context.Context, subs []string, limit int) ([]plugin.MemoryItem, error) {
	var hits strings.Builder
	args := make([]any, 0, len(subs)+1)
	for i, s := range subs {
		if i > 0 {
			hits.WriteString(" + ")
		}
		p := "?" + strconv.Itoa(i+1)
		hits.WriteString("(m.content LIKE " + p + ` ESCAPE '\' OR m.tags LIKE ` + p + ` ESCAPE '\')`)
		args = append(args, likePattern(s))
	}
	args = append(args, limit)
	q := `SELECT ` + itemColumns + `, hits * ` + strconv.FormatFloat(0.5/float64(len(subs)), 'g', -1, 64) + `
		FROM (SELECT m.*, (` + hits.String() + `) AS hits FROM memories m) m
		WHERE hits > 0
		ORDER BY hits DESC, m.created_at DESC, m.id DESC
		LIMIT ?` + strconv.Itoa(len(subs)+1)
	return m.query(ctx, q, args...)
}
