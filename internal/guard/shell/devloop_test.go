package shell

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/netguard"
)

// TestDevLoopCorpus holds the corpus lines of the development loop to the
// letter: every quiet one runs without a person, and every dangerous twin
// reaches one (the corpus as a whole only needs 98% of them).
func TestDevLoopCorpus(t *testing.T) {
	env := corpusEnv(t)
	n := 0
	for _, c := range loadCorpus(t) {
		if c.line < devLoopFirstLine {
			continue
		}
		n++
		an := Analyze(c.command, env)
		switch c.label {
		case "quiet":
			if an.Level >= action.Confirm {
				t.Errorf("corpus.tsv:%d must be quiet (%s), got %s: %s\n%s", c.line, c.note, an.Level, c.command, describe(an))
			}
		case "person":
			if an.Level < action.Confirm {
				t.Errorf("corpus.tsv:%d must reach a person (%s), got %s: %s\n%s", c.line, c.note, an.Level, c.command, describe(an))
			}
		case "block":
			if an.Level != action.Block {
				t.Errorf("corpus.tsv:%d must block (%s), got %s: %s", c.line, c.note, an.Level, c.command)
			}
		}
	}
	if n < 70 {
		t.Fatalf("only %d development-loop lines found", n)
	}
}

// devLoopFirstLine is the first corpus line of the development loop: the
// lines from there on are its.
const devLoopFirstLine = 574

// TestDevLoopSQLiteRC: with a ~/.sqliterc the sqlite3 shell runs commands
// the guard has not seen before the query, so a read of the project's own
// database goes to a person again.
func TestDevLoopSQLiteRC(t *testing.T) {
	root := t.TempDir()
	env := corpusEnvAt(t, root)
	if an := Analyze(`sqlite3 dev.db .tables`, env); an.Level >= action.Confirm {
		t.Fatalf("without a .sqliterc: %s\n%s", an.Level, describe(an))
	}
	if err := os.WriteFile(filepath.Join(root, "home/u/.sqliterc"), []byte(".shell id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if an := Analyze(`sqlite3 dev.db .tables`, env); an.Level < action.Confirm {
		t.Fatalf("with a .sqliterc: %s\n%s", an.Level, describe(an))
	}
}

// TestDevLoopDaemonPort: killing what holds Overseer's own daemon port is
// not a dev server's restart.
func TestDevLoopDaemonPort(t *testing.T) {
	env := corpusEnv(t)
	port := strconv.Itoa(netguard.DefaultDaemonPort) // SelfAPI without a home knows the default port
	if an := Analyze("lsof -ti:"+port+" | xargs kill", env); an.Level < action.Confirm {
		t.Fatalf("kill of the daemon's port: %s\n%s", an.Level, describe(an))
	}
}
