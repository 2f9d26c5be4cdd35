package pgtest_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/overseer-dev/overseer/internal/store/pgtest"
)

func TestMain(m *testing.M) {
	if out := os.Getenv("PGTEST_LEAVE"); out != "" {
		// Re-executed by TestOrphanSwept: start a cluster and end as a
		// test binary killed at its time limit does, without stopping it.
		c, err := pgtest.Start(pgtest.Options{})
		if err != nil {
			os.Exit(3)
		}
		if err := os.WriteFile(out, []byte(c.Dir), 0o600); err != nil {
			os.Exit(4)
		}
		os.Exit(2)
	}
	os.Exit(pgtest.Main(m))
}

// A cluster whose test process ended without stopping it (killed at its
// time limit) is stopped and removed by the next start; the cluster of a
// process that still runs is left alone.
func TestOrphanSwept(t *testing.T) {
	live := pgtest.Shared(t)
	out := filepath.Join(t.TempDir(), "dir")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PGTEST_LEAVE="+out)
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("the process that leaves a cluster: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	dir := string(b)
	pidFile := filepath.Join(dir, "data", "postmaster.pid")
	pb, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the orphan's server is not running: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pb), "\n", 2)[0]))
	if pid <= 1 || syscall.Kill(pid, 0) != nil {
		t.Fatalf("the orphan's server (pid %d) is not running", pid)
	}
	if n := pgtest.Sweep(filepath.Dir(dir)); n < 1 {
		t.Fatalf("swept %d clusters, want the orphan", n)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the orphan's directory is still there: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the orphan's server (pid %d) still runs: %v", pid, err)
	}
	if _, err := os.Stat(live.Dir); err != nil {
		t.Fatalf("the running process's cluster was swept: %v", err)
	}
	conn, err := pgx.Connect(t.Context(), pgtest.Database(t))
	if err != nil {
		t.Fatalf("the running process's cluster: %v", err)
	}
	conn.Close(t.Context())
}

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
