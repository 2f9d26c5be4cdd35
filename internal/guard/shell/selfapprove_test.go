package shell

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/netguard"
)

// selfEnv is an environment whose daemon listens on addr (written to a
// temporary Overseer home's address file).
func selfEnv(tb testing.TB, addr string) Env {
	tb.Helper()
	home := tb.TempDir()
	if err := os.WriteFile(filepath.Join(home, "daemon.json"), []byte(`{"addr":"`+addr+`","pid":1}`), 0o600); err != nil {
		tb.Fatal(err)
	}
	env := corpusEnv(tb)
	env.SelfAPI = netguard.NewSelfAPI(home)
	return env
}

func selfFinding(an Analysis) (string, bool) {
	for _, f := range an.Findings {
		if f.Check == "shell.self-api" || f.Check == "shell.self-approve" {
			return f.Check + ": " + f.Message, f.Hard && f.Level == action.Block
		}
	}
	return "", false
}

// TestSelfApproveCorpus judges testdata/selfapprove.tsv: every way an agent
// could reach Overseer's API or run its approving commands is block, and
// the everyday twins are not. "␤" in a command is a new line.
func TestSelfApproveCorpus(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "selfapprove.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := selfEnv(t, "127.0.0.1:8080")
	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	n, blocks, passes := 0, 0, 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 3 {
			t.Fatalf("selfapprove.tsv:%d: want 3 columns, got %d", n, len(cols))
		}
		cmd := strings.ReplaceAll(cols[1], "␤", "\n")
		an := g.Analyze(cmd, env)
		msg, hard := selfFinding(an)
		switch cols[0] {
		case "block":
			blocks++
			if !hard || an.Level != action.Block {
				t.Errorf("selfapprove.tsv:%d (%s): %q: level %s, finding %q; want a hard block", n, cols[2], cmd, an.Level, msg)
			}
		case "pass":
			passes++
			if msg != "" || an.Level == action.Block {
				t.Errorf("selfapprove.tsv:%d (%s): %q: level %s, finding %q; want no self-protection finding", n, cols[2], cmd, an.Level, msg)
			}
		default:
			t.Fatalf("selfapprove.tsv:%d: unknown label %q", n, cols[0])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if blocks < 40 || passes < 20 {
		t.Fatalf("corpus too small: %d block, %d pass", blocks, passes)
	}
}

// TestSelfAPIListenAddress covers a daemon that listens beyond loopback:
// its own address and port are refused too, and loopback at its port.
func TestSelfAPIListenAddress(t *testing.T) {
	env := selfEnv(t, "10.1.2.3:9443")
	for _, tc := range []struct {
		cmd   string
		block bool
	}{
		{"curl -k https://10.1.2.3:9443/api/v1/approvals", true},
		{"curl -k https://127.0.0.1:9443/", true},
		{"nc 10.1.2.3 9443", true},
		{"curl http://10.1.2.3:80/", false},
		{"curl http://10.9.9.9:9443/", false},
	} {
		an := Analyze(tc.cmd, env)
		_, hard := selfFinding(an)
		if hard != tc.block {
			t.Errorf("%q: self-protection block = %v, want %v (%v)", tc.cmd, hard, tc.block, an.Findings)
		}
	}
}

// TestSelfAPIDefaultPort: without an address file, the default port is
// still the daemon's.
func TestSelfAPIDefaultPort(t *testing.T) {
	an := Analyze("curl -X POST http://127.0.0.1:7777/api/v1/approvals/a/approve", Env{Cwd: "/w", Home: "/h"})
	if _, hard := selfFinding(an); !hard {
		t.Fatalf("default port not blocked: %v", an.Findings)
	}
	an = Analyze("curl http://127.0.0.1:8080/", Env{Cwd: "/w", Home: "/h"})
	if msg, _ := selfFinding(an); msg != "" {
		t.Fatalf("port 8080 without an address file: %s", msg)
	}
}
