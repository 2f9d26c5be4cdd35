package action

import (
	"slices"
	"strings"
	"testing"
)

func TestParsePatchTargets(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: a/new.go\n+package a\n*** Update File: b.go\n*** Move to: c.go\n@@\n-x\n+y\n*** Delete File: d.go\r\n*** Update File: e.go\n*** End Patch\n"
	got := ParsePatchTargets(patch)
	want := []PatchTarget{
		{"a/new.go", PathWrite, "add"}, {"b.go", PathDelete, "move"}, {"c.go", PathWrite, "move"},
		{"d.go", PathDelete, "delete"}, {"e.go", PathWrite, "update"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	a := &Action{Tool: "apply_patch", Kind: KindFileEdit, Cwd: "/p", Args: map[string]any{"input": patch}}
	DeriveFileFacts(a)
	if len(a.Facts.Paths) != 5 || a.Facts.Paths[0].Path != "/p/a/new.go" || !a.Facts.Paths[0].InCwd {
		t.Errorf("facts %+v", a.Facts.Paths)
	}
}

func FuzzParsePatchTargets(f *testing.F) {
	f.Add("*** Begin Patch\n*** Add File: x\n*** Move to: y\n*** Delete File: \n*** End Patch")
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range ParsePatchTargets(s) {
			if p.Path == "" || strings.ContainsAny(p.Path, "\n") {
				t.Fatalf("bad target %+v", p)
			}
			if p.Intent != PathWrite && p.Intent != PathDelete {
				t.Fatalf("bad intent %+v", p)
			}
		}
	})
}
