package action

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

func encLen(t *testing.T, v any) int {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func TestBoundedKeepsSmallActionsWhole(t *testing.T) {
	a := &Action{ID: "act_1", Tool: "Bash", Kind: KindShell, Args: map[string]any{"command": "ls"}}
	got := a.Bounded(4096)
	if got.Cut != nil || got.Args["command"] != "ls" {
		t.Fatalf("a small action was changed: %+v", got)
	}
	// A caller's own Cut is never kept.
	a.Cut = &Cut{Bytes: 1}
	if got := a.Bounded(4096); got.Cut != nil {
		t.Fatal("a caller-supplied Cut was kept")
	}
}

func TestBoundedCutsLongStrings(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	a := &Action{ID: "act_2", Agent: "a", Session: "s", Tool: "Write", Kind: KindFileWrite,
		Args: map[string]any{"file_path": "/src/app/main.go", "content": big}}
	hash := a.ArgsHash()
	got := a.Bounded(32 << 10)
	if n := encLen(t, got); n > 32<<10 {
		t.Fatalf("stored action is %d bytes, over the bound", n)
	}
	if got.Cut == nil || got.Cut.Strings != 1 || got.Cut.Max != 32<<10 {
		t.Fatalf("Cut = %+v", got.Cut)
	}
	full, _ := json.Marshal(a)
	sum := sha256.Sum256(full)
	if got.Cut.Bytes != len(full) || got.Cut.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("Cut does not describe the whole: %+v", got.Cut)
	}
	if got.Args["file_path"] != "/src/app/main.go" || got.ID != "act_2" || got.Session != "s" {
		t.Fatalf("short fields changed: %+v", got)
	}
	c := got.Args["content"].(string)
	bsum := sha256.Sum256([]byte(big))
	if !strings.HasPrefix(c, "xxxx") || !strings.Contains(c, "1048576 bytes, sha256 "+hex.EncodeToString(bsum[:])) {
		t.Fatalf("cut string lacks its length and hash: %.200s…", c[len(c)-150:])
	}
	if len(c) < 16<<10 {
		t.Fatalf("the cut kept only %d bytes of a 32 KiB bound", len(c))
	}
	if a.Args["content"] != big || a.Cut != nil || a.ArgsHash() != hash {
		t.Fatal("Bounded changed the action itself")
	}
}

func TestBoundedShortensManySmallValues(t *testing.T) {
	list := make([]any, 100000)
	for i := range list {
		list[i] = float64(i)
	}
	m := map[string]any{}
	for i := range 5000 {
		m[strings.Repeat("k", 10)+string(rune('a'+i%26))+strings.Repeat("z", i%7)+string(rune(0x4e00+i))] = strings.Repeat("v", 300)
	}
	a := &Action{ID: "act_3", Tool: "mcp__x__y", Kind: KindMCP, Args: map[string]any{"list": list, "map": m},
		Facts: Facts{Notes: []string{"n1", "n2"}}}
	got := a.Bounded(8 << 10)
	if n := encLen(t, got); n > 8<<10 {
		t.Fatalf("stored action is %d bytes, over the bound", n)
	}
	if got.Cut == nil || got.Cut.Dropped == 0 {
		t.Fatalf("Cut = %+v", got.Cut)
	}
	if got.ID != "act_3" || got.Kind != KindMCP {
		t.Fatalf("ids changed: %+v", got)
	}
}

func TestBoundedVerdictKeepsLevelAndHash(t *testing.T) {
	long := strings.Repeat("é", 100000)
	r := Reason{Layer: "L3", Source: SourceGuard, Name: "g", Level: Approve, Message: long}
	v := &Verdict{ActionID: "act_4", Level: Approve, ArgsHash: strings.Repeat("a", 64), Reasons: []Reason{r, r, r},
		Decider: &r, Preview: &Preview{Summary: long, Items: []string{long, long}}}
	got := v.Bounded(16 << 10)
	if n := encLen(t, got); n > 16<<10 {
		t.Fatalf("stored verdict is %d bytes", n)
	}
	if got.Level != Approve || got.ArgsHash != v.ArgsHash || got.ActionID != "act_4" || got.Cut == nil {
		t.Fatalf("verdict lost its level or hash: %+v", got)
	}
	if got.Decider == nil || got.Decider.Level != Approve {
		t.Fatal("the decider's level was lost")
	}
	for _, s := range []string{got.Decider.Message, got.Preview.Summary} {
		if !strings.Contains(s, "cut by Overseer") {
			t.Fatalf("not cut: %.100s", s)
		}
	}
}

func TestCutStringRuneBoundary(t *testing.T) {
	s := strings.Repeat("日本", 100)
	c := CutString(s, 5)
	if !strings.HasPrefix(c, "日…") {
		t.Fatalf("cut at a bad boundary: %q", c[:10])
	}
}

// BoundedJSON's encoding is json.Marshal of the copy Bounded returns,
// whole or cut, for actions and verdicts: records carry it as is.
func TestBoundedJSONIsTheCopysEncoding(t *testing.T) {
	big := strings.Repeat("<x&y>", 1<<14)
	for _, max := range []int{0, 4096, 1 << 20} {
		for _, a := range []*Action{
			{ID: "act_1", Tool: "Bash", Kind: KindShell, Args: map[string]any{"command": "ls <a> && b"}},
			{ID: "act_2", Tool: "Write", Kind: KindFileWrite, Args: map[string]any{"file_path": "/p", "content": big}},
		} {
			got, raw := a.BoundedJSON(max)
			want, err := json.Marshal(&got)
			if err != nil || string(raw) != string(want) {
				t.Fatalf("max %d, action %s: BoundedJSON's encoding differs from its copy's", max, a.ID)
			}
			if b := a.Bounded(max); encLen(t, &b) != len(raw) {
				t.Fatalf("max %d, action %s: Bounded and BoundedJSON differ", max, a.ID)
			}
			v := &Verdict{ActionID: a.ID, Level: Auto, Reasons: []Reason{{Message: big}}}
			gv, rawV := v.BoundedJSON(max)
			wantV, err := json.Marshal(&gv)
			if err != nil || string(rawV) != string(wantV) {
				t.Fatalf("max %d, verdict of %s: BoundedJSON's encoding differs from its copy's", max, a.ID)
			}
		}
	}
}
