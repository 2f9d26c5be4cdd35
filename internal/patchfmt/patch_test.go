package patchfmt

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePatch(t *testing.T) {
	fs, err := ParsePatch("*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Update File: b.go\n*** Move to: c.go\n@@ func x\n-a\n+b\n*** Delete File: d\n*** End Patch\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 3 || fs[0].Op != "add" || fs[0].Body != "+one\n+two" || fs[1].Op != "update" || fs[1].MoveTo != "c.go" ||
		fs[1].Body != "@@ func x\n-a\n+b" || fs[2].Op != "delete" || fs[2].Path != "d" {
		t.Fatalf("%+v", fs)
	}
	if c, err := AddedContent(fs[0].Body); err != nil || c != "one\ntwo\n" {
		t.Fatalf("added %q %v", c, err)
	}
	for _, bad := range []string{"", "hello", "*** Begin Patch\n*** Add File: a\n+x\n", "*** Begin Patch\nstray\n*** End Patch",
		"*** Begin Patch\n*** Move to: x\n*** End Patch", "*** Begin Patch\n*** Update File: \n*** End Patch"} {
		if _, err := ParsePatch(bad); !errors.Is(err, ErrPatch) {
			t.Errorf("%q: %v, want ErrPatch", bad, err)
		}
	}
}

// TestReverseUpdate: a patch is undone where the file is what it made;
// anything else is refused.
func TestReverseUpdate(t *testing.T) {
	for _, tc := range []struct {
		name, before, body string
	}{
		{"one line in context", "line one\nline two\nline three\n", "@@\n line one\n-line two\n+line 2\n line three"},
		{"no context", "a\nb\nc\n", "@@\n-a\n+A"},
		{"two chunks", "a\nb\nc\nd\ne\nf\n", "@@\n a\n-b\n+B\n@@\n e\n-f\n+F\n+G"},
		{"@@ names a line", "func x() {\n\treturn 1\n}\nfunc y() {\n\treturn 1\n}\n", "@@ func y() {\n-\treturn 1\n+\treturn 2"},
		{"append", "a\n", "@@\n+b\n+c"},
		{"end of file", "x\ny\nx\ny\n", "@@\n x\n-y\n+z\n*** End of File"},
		{"insert in the middle", "a\nc\n", "@@\n a\n+b\n c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after, err := ApplyUpdate(tc.before, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if after == tc.before {
				t.Fatalf("the patch changed nothing")
			}
			got, err := ReverseUpdate(after, tc.body)
			if err != nil || got != tc.before {
				t.Fatalf("reversed to %q (%v), want %q", got, err, tc.before)
			}
			// A file changed since, in the patch's lines, is refused.
			changed := strings.Replace(after, "\n", " edited\n", 1)
			if _, err := ReverseUpdate(changed, tc.body); err == nil && strings.Contains(tc.body, "\n ") {
				if r, _ := ReverseUpdate(changed, tc.body); r == tc.before {
					t.Fatalf("a changed file reversed to the old content")
				}
			}
		})
	}
	refused := []struct{ name, content, body string }{
		{"the new lines are gone", "a\nb\n", "@@\n-a\n+A"},
		{"twice: which one?", "A\nX\nA\n", "@@\n-B\n+A"},
		{"only removes", "a\nc\n", "@@\n-b"},
		{"end of file moved", "x\nz\nq\n", "@@\n x\n-y\n+z\n*** End of File"},
		{"appended lines not at the end", "b\nc\na\n", "@@\n+b\n+c"},
		{"named line missing", "a\nb\n", "@@ nowhere\n-x\n+b"},
	}
	for _, tc := range refused {
		if got, err := ReverseUpdate(tc.content, tc.body); !errors.Is(err, ErrPatchMismatch) {
			t.Errorf("%s: reversed to %q (%v), want ErrPatchMismatch", tc.name, got, err)
		}
	}
	if _, err := ReverseUpdate("a\n", "@@\nbad line"); !errors.Is(err, ErrPatch) {
		t.Errorf("a malformed body: %v", err)
	}
}

// FuzzReverseUpdate: for any content and body, never a panic, and a
// reversal that succeeds is one the patch maps back exactly.
func FuzzReverseUpdate(f *testing.F) {
	f.Add("line one\nline two\n", "@@\n line one\n-line two\n+line 2")
	f.Add("a\nb\nc\n", "@@ a\n-b\n+B\n*** End of File")
	f.Add("", "@@\n+x")
	f.Fuzz(func(t *testing.T, content, body string) {
		if len(content) > 4096 || len(body) > 4096 {
			return
		}
		before, err := ReverseUpdate(content, body)
		if err != nil {
			return
		}
		again, err := ApplyUpdate(before, body)
		if err != nil || again != content {
			t.Fatalf("reversal %q does not map back to %q: %q %v", before, content, again, err)
		}
	})
}
