package pgtest_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/overseer-dev/overseer/internal/store/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Two test databases are apart: a table made in one is not in the other.
func TestFreshDatabases(t *testing.T) {
	a, b := pgtest.Database(t), pgtest.Database(t)
	if a == b {
		t.Fatalf("two tests share database %s", a)
	}
	ca, err := pgx.Connect(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(t.Context())
	if _, err := ca.Exec(t.Context(), `CREATE TABLE x (n int)`); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(t.Context())
	var n int
	if err := cb.QueryRow(t.Context(), `SELECT count(*) FROM pg_class WHERE oid = to_regclass('x')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the second database has the first's table (%d, %v)", n, err)
	}
}

// The cluster survives a crash-like stop and start, and its socket's
// directory is its owner's alone.
func TestRestart(t *testing.T) {
	c := pgtest.Shared(t)
	st, err := os.Stat(c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory mode %v, want 0700", st.Mode().Perm())
	}
	dsn := pgtest.Database(t)
	if err := c.StopServer(true); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(t.Context(), dsn); err == nil {
		t.Fatal("connected to a stopped server")
	}
	if err := c.StartServer(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(t.Context())
}
