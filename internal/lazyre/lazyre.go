// Package lazyre holds regular expressions that are compiled on first use
// instead of at package initialisation. Every command of the binary runs
// every package's initialisation: a process that needs none of a package's
// patterns (a hook that asks the daemon) should not compile them.
//
// A pattern is a constant of the program: one that does not compile is a
// bug, found by the tests (CompileAll), and panics on first use as
// regexp.MustCompile does.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled on first use. Its methods are
// those of *regexp.Regexp; it is safe for concurrent use.
type Regexp struct {
	expr string
	re   func() *regexp.Regexp
}

var (
	mu  sync.Mutex
	all []*Regexp
)

// New returns expr, to be compiled (regexp.MustCompile) on first use.
func New(expr string) *Regexp {
	r := &Regexp{expr: expr, re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })}
	mu.Lock()
	all = append(all, r)
	mu.Unlock()
	return r
}

// CompileAll compiles every pattern made by New so far and returns the
// first one that does not compile, for the tests.
func CompileAll() error {
	mu.Lock()
	rs := append([]*Regexp(nil), all...)
	mu.Unlock()
	for _, r := range rs {
		if _, err := regexp.Compile(r.expr); err != nil {
			return err
		}
	}
	return nil
}

// Count is the number of patterns made by New so far.
func Count() int {
	mu.Lock()
	defer mu.Unlock()
	return len(all)
}

// RE returns the compiled expression.
func (r *Regexp) RE() *regexp.Regexp { return r.re() }

func (r *Regexp) String() string                 { return r.expr }
func (r *Regexp) MatchString(s string) bool      { return r.re().MatchString(s) }
func (r *Regexp) Match(b []byte) bool            { return r.re().Match(b) }
func (r *Regexp) FindString(s string) string     { return r.re().FindString(s) }
func (r *Regexp) FindStringIndex(s string) []int { return r.re().FindStringIndex(s) }
func (r *Regexp) FindIndex(b []byte) []int       { return r.re().FindIndex(b) }
func (r *Regexp) Find(b []byte) []byte           { return r.re().Find(b) }
func (r *Regexp) FindStringSubmatch(s string) []string {
	return r.re().FindStringSubmatch(s)
}
func (r *Regexp) FindStringSubmatchIndex(s string) []int {
	return r.re().FindStringSubmatchIndex(s)
}
func (r *Regexp) FindSubmatch(b []byte) [][]byte { return r.re().FindSubmatch(b) }
func (r *Regexp) FindAllString(s string, n int) []string {
	return r.re().FindAllString(s, n)
}
func (r *Regexp) FindAllStringIndex(s string, n int) [][]int {
	return r.re().FindAllStringIndex(s, n)
}
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.re().FindAllStringSubmatch(s, n)
}
func (r *Regexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return r.re().FindAllStringSubmatchIndex(s, n)
}
func (r *Regexp) FindAllIndex(b []byte, n int) [][]int { return r.re().FindAllIndex(b, n) }
func (r *Regexp) FindAllSubmatchIndex(b []byte, n int) [][]int {
	return r.re().FindAllSubmatchIndex(b, n)
}
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.re().ReplaceAllString(src, repl)
}
func (r *Regexp) ReplaceAllLiteralString(src, repl string) string {
	return r.re().ReplaceAllLiteralString(src, repl)
}
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.re().ReplaceAllStringFunc(src, repl)
}
func (r *Regexp) ReplaceAll(src, repl []byte) []byte { return r.re().ReplaceAll(src, repl) }
func (r *Regexp) Split(s string, n int) []string     { return r.re().Split(s, n) }
func (r *Regexp) SubexpNames() []string              { return r.re().SubexpNames() }
func (r *Regexp) SubexpIndex(name string) int        { return r.re().SubexpIndex(name) }
func (r *Regexp) NumSubexp() int                     { return r.re().NumSubexp() }
