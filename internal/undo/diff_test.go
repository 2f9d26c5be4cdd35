package undo

import (
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name, a, b, want string
	}{
		{"equal", "x\n", "x\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nX\nc\n", "--- A\n+++ B\n@@ -1,3 +1,3 @@\n a\n-b\n+X\n c\n"},
		{"insert at start", "b\n", "a\nb\n", "--- A\n+++ B\n@@ -1 +1,2 @@\n+a\n b\n"},
		{"from empty", "", "a\n", "--- A\n+++ B\n@@ -0,0 +1 @@\n+a\n"},
		{"to empty", "a\n", "", "--- A\n+++ B\n@@ -1 +0,0 @@\n-a\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			"--- A\n+++ B\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := unifiedDiff("A", "B", tc.a, tc.b); got != tc.want {
				t.Errorf("diff:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
	t.Run("too many changes", func(t *testing.T) {
		var a, b strings.Builder
		for i := range 3000 {
			a.WriteString("a" + string(rune('0'+i%10)) + "\n")
			b.WriteString("b" + string(rune('0'+i%10)) + "\n")
		}
		got := unifiedDiff("A", "B", a.String(), b.String())
		if !strings.Contains(got, "too many changes") {
			t.Errorf("diff = %.200q", got)
		}
	})
}

// FuzzDiffLines: the edit script reconstructs both sides, and the unified
// diff never panics.
func FuzzDiffLines(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nX\nc\n")
	f.Add("", "x")
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n")
	f.Add("x\ny", "x\nz\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		al, bl := splitLines(a), splitLines(b)
		ops, ok := diffLines(al, bl, maxDiffEdits)
		if !ok {
			return
		}
		var ga, gb []string
		for _, o := range ops {
			if o.kind != opInsert {
				ga = append(ga, o.line)
			}
			if o.kind != opDelete {
				gb = append(gb, o.line)
			}
		}
		if strings.Join(ga, "") != strings.Join(al, "") || strings.Join(gb, "") != strings.Join(bl, "") {
			t.Fatalf("edit script does not reconstruct the inputs")
		}
		_ = unifiedDiff("a", "b", a, b)
	})
}
