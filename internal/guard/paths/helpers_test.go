package paths

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

// fixture is a real directory tree with real symbolic links:
//
//	root/home            the user's home (.ssh, .aws, .kube, .overseer)
//	root/proj            the working directory
//	root/out             the output directory
//	root/other           somewhere else
//	root/policy.yaml     a protected policy file
type fixture struct {
	root, home, proj, out, other, ovh, policy string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{
		root:   root,
		home:   filepath.Join(root, "home"),
		proj:   filepath.Join(root, "proj"),
		out:    filepath.Join(root, "out"),
		other:  filepath.Join(root, "other"),
		policy: filepath.Join(root, "policy.yaml"),
	}
	f.ovh = filepath.Join(f.home, ".overseer")
	files := map[string]string{
		"home/.ssh/id_rsa":           "PRIVATE",
		"home/.ssh/id_rsa.pub":       "ssh-rsa AAAA",
		"home/.aws/credentials":      "[default]",
		"home/.kube/config":          "apiVersion: v1",
		"home/.overseer/overseer.db": "db",
		"home/notes.txt":             "notes",
		"proj/main.go":               "package main\n",
		"proj/README.md":             "# readme\n",
		"proj/.env":                  "TOKEN=1",
		"proj/.env.example":          "TOKEN=",
		"proj/.env.production":       "TOKEN=2",
		"proj/certs/server.pem":      "CERT",
		"proj/sub/a.txt":             "a",
		"proj/.git/hooks/pre-commit": "#!/bin/sh",
		"out/existing.txt":           "out",
		"other/notes.txt":            "other",
		"policy.yaml":                "version: 1",
	}
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"proj/link-ssh":      "../home/.ssh",
		"proj/link-key":      filepath.Join(root, "home/.ssh/id_rsa"),
		"proj/link-ovh":      filepath.Join(root, "home/.overseer"),
		"proj/link-db":       filepath.Join(root, "home/.overseer/overseer.db"),
		"proj/link-policy":   filepath.Join(root, "policy.yaml"),
		"proj/loop1":         "loop2",
		"proj/loop2":         "loop1",
		"proj/self":          "self",
		"proj/link-other":    filepath.Join(root, "other"),
		"proj/innocent.txt":  ".env",
		"proj/up":            "..",
		"proj/sub/back":      "../main.go",
		"proj/chain1":        "chain2",
		"proj/chain2":        "sub/a.txt",
		"home/.ssh/fake.pub": "id_rsa",
	}
	for p, target := range links {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// expand replaces the fixture's placeholders in s.
func (f *fixture) expand(s string) string {
	return strings.NewReplacer("$ROOT", f.root, "$HOME", f.home, "$PROJ", f.proj, "$OUT", f.out,
		"$OTHER", f.other, "$OVH", f.ovh).Replace(s)
}

func (f *fixture) config(reads ReadTracker) Config {
	return Config{Home: f.home, OverseerHome: f.ovh, Protected: []string{f.policy}, OutputDir: f.out, Reads: reads}
}

// newTracker returns a StoreTracker over a real SQLite file.
func newTracker(t testing.TB) (*StoreTracker, *sqlite.DB) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "overseer.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return NewStoreTracker(db, nil), db
}

// strictest summarises findings as "hard:LEVEL", "soft:LEVEL" or "none",
// with the check of the strictest finding (hard first on a tie).
func strictest(fs []guard.Finding) (string, string) {
	var best *guard.Finding
	for i := range fs {
		f := &fs[i]
		if best == nil || f.Level > best.Level || (f.Level == best.Level && f.Hard && !best.Hard) {
			best = f
		}
	}
	if best == nil {
		return "none", "-"
	}
	h := "soft"
	if best.Hard {
		h = "hard"
	}
	return h + ":" + best.Level.String(), best.Check
}

func fileAction(kind action.Kind, agent, tool, cwd, p string) *action.Action {
	key := "file_path"
	return &action.Action{ID: "act_test", Agent: agent, Session: "s1", Tool: tool, Kind: kind, Cwd: cwd,
		Args: map[string]any{key: p}}
}
