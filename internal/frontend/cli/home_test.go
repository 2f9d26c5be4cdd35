package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/kernel"
)

func TestServeHome(t *testing.T) {
	env := map[string]string{"HOME": "/home/ann"}
	get := func(k string) string { return env[k] }
	cwd := func() string { return "/work" }
	for _, c := range []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{"/usr/bin/overseer", "serve"}, "/home/ann/.overseer", true},
		{[]string{"./bin/overseer", "--home", "/srv/ov", "serve", "--addr", "127.0.0.1:0"}, "/srv/ov", true},
		{[]string{"overseer", "serve", "--home=data"}, "/work/data", true},
		{[]string{"overseer", "--policy", "p.yaml", "serve"}, "/home/ann/.overseer", true},
		{[]string{"overseer", "approvals"}, "", false},
		{[]string{"overseer", "run", "serve the page"}, "", false},
		{[]string{"bash", "serve"}, "", false},
	} {
		got, ok := serveHome(c.args, get, cwd)
		if got != c.want || ok != c.ok {
			t.Errorf("%q: %q %v, want %q %v", c.args, got, ok, c.want, c.ok)
		}
	}
	env["OVERSEER_HOME"] = "/env/home"
	if got, _ := serveHome([]string{"overseer", "serve"}, get, cwd); got != "/env/home" {
		t.Errorf("OVERSEER_HOME: %q", got)
	}
}

func TestCheckHome(t *testing.T) {
	empty := t.TempDir()
	err := checkHome(empty, []string{"/srv/ov"})
	if err == nil || !strings.Contains(err.Error(), "the daemon runs with /srv/ov") || !strings.Contains(err.Error(), "--home /srv/ov") {
		t.Fatalf("a daemon elsewhere: %v", err)
	}
	if err := checkHome(empty, nil); err == nil || !strings.Contains(err.Error(), "no daemon runs for it") {
		t.Fatalf("no daemon: %v", err)
	}
	if _, err := os.Stat(filepath.Join(empty, kernel.DBFile)); err == nil {
		t.Fatal("checking a home created a database")
	}
	if err := os.WriteFile(filepath.Join(empty, kernel.DBFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkHome(empty, []string{"/srv/ov"}); err != nil {
		t.Fatalf("a home with a database: %v", err)
	}
}
