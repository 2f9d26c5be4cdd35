package kernel_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store/pgtest"
)

// With a shared database, the files its connection depends on — the
// password file the URL names (or ~/.pgpass), the service file, the
// client's certificates and the server's CA — are as much Overseer's as
// its home: an agent reading the password could write the database, one
// rewriting the service file or the CA could put a server of its own in
// its place. With the SQLite file they are the user's like any other.
func TestStoreFilesProtected(t *testing.T) {
	home, _, proj := effectWorld(t)
	etc := filepath.Join(home, "etc-overseer")
	writeTree(t, home, map[string]string{
		"etc-overseer/pgpass":         "db.internal:5432:overseer:overseer:pw\n",
		"etc-overseer/db-ca.pem":      "-----BEGIN CERTIFICATE-----\n",
		".pgpass":                     "*:*:*:*:pw\n",
		".pg_service.conf":            "[ovs]\nhost=db.internal\n",
		".postgresql/postgresql.key":  "key\n",
		"proj/deploy/pgpass":          "app:5432:app:app:pw\n",
		"proj/deploy/pg_service.conf": "[app]\nhost=app\n",
	})
	url := pgtest.Database(t) + "&passfile=" + filepath.Join(etc, "pgpass") + "&sslrootcert=" + filepath.Join(etc, "db-ca.pem")
	open := func(store string) *kernel.Kernel {
		ovh := t.TempDir()
		pol := "version: 1\nextends: builtin\n"
		if store != "" {
			pol += "settings:\n  store: '" + store + "'\n"
		}
		if err := os.WriteFile(filepath.Join(ovh, kernel.PolicyName), []byte(pol), 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := kernel.Open(context.Background(), kernel.Config{Home: ovh})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		return k
	}
	shared, local := open(url), open("")
	judge := func(k *kernel.Kernel, tool string, args map[string]any) action.Verdict {
		a := &action.Action{Tool: tool, Agent: "claude-code", Session: "s", Cwd: proj, Args: args}
		return k.Evaluate(context.Background(), a)
	}
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"Bash", map[string]any{"command": "cat " + etc + "/pgpass"}},
		{"Read", map[string]any{"file_path": etc + "/pgpass"}},
		{"Bash", map[string]any{"command": "cp /tmp/evil.pem " + etc + "/db-ca.pem"}},
		{"Bash", map[string]any{"command": "cat ~/.pgpass"}},
		{"Bash", map[string]any{"command": "grep -r password ~/.pg_service.conf"}},
		{"Bash", map[string]any{"command": "printf '[ovs]\\nhost=evil.example\\n' > ~/.pg_service.conf"}},
		{"Write", map[string]any{"file_path": home + "/.pg_service.conf", "content": "[ovs]\nhost=evil.example\n"}},
		{"Bash", map[string]any{"command": "base64 ~/.postgresql/postgresql.key"}},
	}
	for _, c := range cases {
		if v := judge(shared, c.tool, c.args); v.Level != action.Block {
			t.Errorf("shared database: %s %v: %s, want block", c.tool, c.args, v.Summary())
		}
		if v := judge(local, c.tool, c.args); v.Level == action.Block {
			t.Errorf("SQLite: %s %v is blocked (%s): only a shared database's files are Overseer's", c.tool, c.args, v.Summary())
		}
	}
	// Twins: an application's own database files and clients stay as they
	// were, with either store.
	for _, cmd := range []string{"cat deploy/pgpass", "cat deploy/pg_service.conf", "psql -d app -c 'SELECT 1'", "cat .env"} {
		args := map[string]any{"command": cmd}
		vs, vl := judge(shared, "Bash", args), judge(local, "Bash", args)
		if vs.Level != vl.Level || vs.Level == action.Block {
			t.Errorf("%q: %s with the shared database, %s with SQLite; want the same, not block", cmd, vs.Summary(), vl.Summary())
		}
	}
}

// With a shared database, a database client the agent runs against it —
// psql or pg_dump by host and name, by URL or connection string, a driver
// in inline code — is blocked like a write of Overseer's SQLite file; the
// same clients against another database of the same server, or any
// database with the SQLite file, are judged as before.
func TestStoreGuard(t *testing.T) {
	_, _, proj := effectWorld(t)
	url := pgtest.Database(t)
	tgt, ok := kernel.ParseDBURLForTest(url)
	if !ok || len(tgt.Hosts) == 0 || tgt.DB == "" {
		t.Fatalf("the test database's URL: %q %+v", url, tgt)
	}
	host, db := tgt.Hosts[0], tgt.DB
	open := func(store string) *kernel.Kernel {
		ovh := t.TempDir()
		pol := "version: 1\nextends: builtin\n"
		if store != "" {
			pol += "settings:\n  store: '" + store + "'\n"
		}
		if err := os.WriteFile(filepath.Join(ovh, kernel.PolicyName), []byte(pol), 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := kernel.Open(context.Background(), kernel.Config{Home: ovh})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		return k
	}
	shared, local := open(url), open("")
	judge := func(k *kernel.Kernel, cmd string) action.Verdict {
		return k.Evaluate(context.Background(), &action.Action{Tool: "Bash", Agent: "claude-code", Session: "s", Cwd: proj,
			Args: map[string]any{"command": cmd}})
	}
	for _, cmd := range []string{
		"psql -h " + host + " -d " + db + " -c 'DELETE FROM audit'",
		"psql -h " + host + " " + db + " -c 'SELECT * FROM approvals'",
		"psql --host=" + host + " --dbname=" + db,
		`psql "host=` + host + ` dbname=` + db + `" -c 'TRUNCATE controls'`,
		"pg_dump '" + url + "'",
		`python3 -c "import psycopg; psycopg.connect('host=` + host + ` dbname=` + db + `').execute('DELETE FROM user_rules')"`,
		`node -e "new (require('pg').Client)({host: '` + host + `', database: '` + db + `'})"`,
		`node -e "x('` + url + `')"`,
		"PGHOST=" + host + " PGDATABASE=" + db + " psql -c 'SELECT 1'",
	} {
		if v := judge(shared, cmd); v.Level != action.Block {
			t.Errorf("shared database: %q: %s, want block", cmd, v.Summary())
		}
		if v := judge(local, cmd); v.Level == action.Block {
			t.Errorf("SQLite: %q is blocked: %s", cmd, v.Summary())
		}
	}
	for _, cmd := range []string{
		"psql -h " + host + " -d app -c 'SELECT 1'",
		"psql -d app -c 'SELECT 1'",
		`python3 -c "import psycopg; psycopg.connect('host=localhost dbname=app')"`,
		"pg_dump postgres://app@localhost/app",
		"PGHOST=" + host + " PGDATABASE=app psql -c 'SELECT 1'",
	} {
		vs, vl := judge(shared, cmd), judge(local, cmd)
		if vs.Level != vl.Level || vs.Level == action.Block {
			t.Errorf("%q: %s with the shared database, %s with SQLite; want the same, not block", cmd, vs.Summary(), vl.Summary())
		}
	}
}
