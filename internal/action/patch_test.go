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

func TestPatchPreview(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: docs/new.md\n+# New\n+text\n*** Update File: main.go\n@@ func main()\n-\tprintln(1)\n+\tprintln(2)\n*** Update File: a.go\n*** Move to: b.go\n@@\n-x\n+y\n*** Delete File: old.go\n*** End Patch\n"
	a := &Action{Tool: "apply_patch", Kind: KindFileEdit, Args: map[string]any{"input": patch}}
	p := PatchPreview(a)
	if p == nil {
		t.Fatal("no preview")
	}
	want := []string{"add docs/new.md (+2)", "update main.go (+1 −1)", "move a.go → b.go (+1 −1)", "delete old.go"}
	if !slices.Equal(p.Items, want) {
		t.Errorf("items %q, want %q", p.Items, want)
	}
	if p.Summary != "apply_patch changes 4 file(s): add 1, update 1, move 1, delete 1" {
		t.Errorf("summary %q", p.Summary)
	}
	for _, s := range []string{"--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,2 @@\n+# New\n", "--- a/main.go\n+++ b/main.go\n@@ func main()\n-\tprintln(1)\n+\tprintln(2)\n", "--- a/a.go\n+++ b/b.go\n", "--- a/old.go\n+++ /dev/null\n"} {
		if !strings.Contains(p.Diff, s) {
			t.Errorf("diff lacks %q:\n%s", s, p.Diff)
		}
	}
	if PatchPreview(&Action{Args: map[string]any{"command": "ls"}}) != nil {
		t.Error("a preview without a patch")
	}
}
