package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error of Load, Parse and CompileRules wraps
// ErrInvalid; callers branch with errors.Is.
var (
	// ErrInvalid means a policy (or a user-layer rule) is not valid: a syntax
	// error, an unknown field, a bad level, kind, glob, duration or CEL
	// condition, or a failed example.
	ErrInvalid = errors.New("invalid policy")
	// ErrExample means a rule's match or not_match example failed. It wraps
	// ErrInvalid.
	ErrExample = fmt.Errorf("%w: example failed", ErrInvalid)
	// ErrEval means a rule's condition could not be evaluated against an
	// action. The engine must fail closed on it (never treat it as "no match").
	ErrEval = errors.New("rule evaluation failed")
)

// Error is one problem found in a policy, with where it was found. Line is 0
// when the rule did not come from a file (user-layer rules).
type Error struct {
	File string // the policy's name as given to Parse or Load
	Line int    // 1-based line in File, 0 when unknown
	Msg  string // what is wrong, for a person
	Err  error  // the sentinel (ErrInvalid or ErrExample)
}

// Error formats the problem as "file:line: message".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error {
	if e.Err == nil {
		return ErrInvalid
	}
	return e.Err
}

// EvalError is returned by Matches, First and Trace when a rule's condition
// fails at run time. It wraps ErrEval.
type EvalError struct {
	Rule  string // the rule's name
	Layer string // the rule's layer
	Err   error  // the CEL error
}

// Error describes the failed rule.
func (e *EvalError) Error() string {
	return fmt.Sprintf("%s rule %q: %v: %v", e.Layer, e.Rule, ErrEval, e.Err)
}

// Unwrap returns ErrEval and the cause.
func (e *EvalError) Unwrap() []error { return []error{ErrEval, e.Err} }

// maxErrors bounds how many problems one Parse reports.
const maxErrors = 20

// diag collects the problems of one Parse.
type diag struct {
	file string
	errs []error
}

func (d *diag) add(line int, sentinel error, format string, args ...any) {
	if len(d.errs) >= maxErrors {
		return
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Msg: fmt.Sprintf(format, args...), Err: sentinel})
}

func (d *diag) errorf(line int, format string, args ...any) {
	d.add(line, ErrInvalid, format, args...)
}

func (d *diag) full() bool { return len(d.errs) >= maxErrors }

func (d *diag) err() error {
	switch len(d.errs) {
	case 0:
		return nil
	case 1:
		return d.errs[0]
	}
	return errors.Join(d.errs...)
}

// suggest returns ` (did you mean "x"?)` when one of known is close to s.
func suggest(s string, known []string) string {
	best, bestD := "", 3
	ls := strings.ToLower(s)
	for _, k := range known {
		d := editDistance(ls, k)
		if d < bestD && d < max(len(k)/2, 1)+1 {
			best, bestD = k, d
		}
	}
	if best == "" || best == s {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of a and b (bytes), capped for
// long inputs, which are never close to a field name anyway.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
