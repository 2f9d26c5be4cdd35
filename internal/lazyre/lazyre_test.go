package lazyre

import (
	"strings"
	"testing"
)

func TestLazy(t *testing.T) {
	r := New(`^a(b+)c$`)
	if !r.MatchString("abbc") || r.MatchString("ac") {
		t.Fatal("MatchString")
	}
	if got := r.FindStringSubmatch("abbbc"); len(got) != 2 || got[1] != "bbb" {
		t.Fatalf("FindStringSubmatch = %q", got)
	}
	if r.String() != `^a(b+)c$` || r.RE() != r.RE() {
		t.Fatal("String or RE")
	}
}

func TestCompileAllReportsABadPattern(t *testing.T) {
	if err := CompileAll(); err != nil {
		t.Fatal(err)
	}
	bad := New(`a(`)
	err := CompileAll()
	if err == nil || !strings.Contains(err.Error(), "missing closing )") {
		t.Fatalf("CompileAll = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a bad pattern did not panic on first use")
		}
	}()
	bad.MatchString("a")
}
