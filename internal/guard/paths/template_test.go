package paths

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// A .env the command creates as a copy of the template git tracks beside
// it (the shell guard sets Template) is no secret yet: notify. An existing
// .env (its secrets would be lost), one outside the working tree, one
// reached through a link, a template that is a link or not a template, and
// a read still reach a person.
func TestSecretFromTemplate(t *testing.T) {
	fx := newFixture(t)
	tr, _ := newTracker(t)
	g := New(fx.config(tr))
	mk := func(rel, text string) string {
		p := filepath.Join(fx.root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("proj/web/.env.example", "PORT=3000\n")
	mk("other/.env.example", "PORT=3000\n")
	if err := os.Symlink(fx.other, filepath.Join(fx.proj, "lnk")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(fx.proj, "svc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(fx.home, ".aws", "credentials"), filepath.Join(fx.proj, "svc", ".env.example")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, template string
		intent               action.PathIntent
		want                 string
	}{
		{"new .env from its template", fx.proj + "/web/.env", fx.proj + "/web/.env.example", action.PathWrite, "soft:notify"},
		{"existing .env overwritten", fx.proj + "/.env", fx.proj + "/.env.example", action.PathWrite, "hard:approve"},
		{"no template", fx.proj + "/web/.env", "", action.PathWrite, "hard:approve"},
		{".env outside the working tree", fx.other + "/.env", fx.other + "/.env.example", action.PathWrite, "hard:approve"},
		{".env reached through a link", fx.proj + "/lnk/.env", fx.proj + "/lnk/.env.example", action.PathWrite, "hard:approve"},
		{"template is a link to credentials", fx.proj + "/svc/.env", fx.proj + "/svc/.env.example", action.PathWrite, "hard:approve"},
		{"template is another secret", fx.proj + "/web/.env", fx.home + "/.aws/credentials", action.PathWrite, "hard:approve"},
		{"template in another directory", fx.proj + "/web/.env", fx.proj + "/.env.example", action.PathWrite, "hard:approve"},
		{"a read", fx.proj + "/web/.env", fx.proj + "/web/.env.example", action.PathRead, "hard:approve"},
	}
	for _, tc := range tests {
		a := &action.Action{ID: "act_test", Agent: "claude-code", Session: "s1", Tool: "Bash", Kind: action.KindShell,
			Cwd: fx.proj, Args: map[string]any{"command": "cp"}}
		a.Facts.Paths = []action.PathFact{{Path: tc.path, Intent: tc.intent, InCwd: action.Within(fx.proj, tc.path), Template: tc.template}}
		fs, err := g.Check(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		if got, check := strictest(fs); got != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got, check, tc.want)
		}
	}
}
