// Package pgtest runs a throwaway PostgreSQL server for tests: one cluster
// per test process, started on first use in a temporary directory (initdb,
// a random port, its socket in that directory, no TCP listener), and a
// fresh, empty database per test (a schema of its own; see Database).
// Main stops the cluster and removes its files when the tests are done.
//
// PostgreSQL refuses to run as root: a root test process runs the server as
// the unprivileged user "postgres" (created by Debian's postgresql package;
// scripts/install-db-test-tools.sh installs it), which owns the temporary
// directory. The socket's directory is that user's alone (mode 0700), so no
// other unprivileged user of the machine can connect to the cluster, whose
// local connections are trusted.
//
// When PostgreSQL is not installed a test that needs it is skipped with a
// loud message, or failed when CI=true.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BinEnv names a directory holding initdb, pg_ctl and postgres, to use
// instead of the installed ones.
const BinEnv = "PGTEST_BIN"

// RunAs is the user a root test process runs the server as.
const RunAs = "postgres"

// Options tune a cluster.
type Options struct {
	// Durable keeps fsync on (benchmarks). Tests turn it off: a test
	// cluster only has to survive its own processes, not the machine.
	Durable bool
}

// Cluster is a running PostgreSQL server in a temporary directory.
type Cluster struct {
	Dir    string // the cluster's temporary directory (data, socket, log)
	Socket string // the directory of the server's Unix socket
	Port   int
	User   string // the database superuser
	bin    string
	cred   *syscall.Credential // nil: run as this process's user
	n      atomic.Int64
}

// Bin returns the directory of PostgreSQL's server programs: $PGTEST_BIN,
// else the newest /usr/lib/postgresql/<version>/bin (Debian), else the
// directory of initdb on PATH.
func Bin() (string, error) {
	if d := os.Getenv(BinEnv); d != "" {
		return d, nil
	}
	cands, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(cands, func(i, j int) bool { return version(cands[i]) > version(cands[j]) })
	if len(cands) > 0 {
		return filepath.Dir(cands[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL's initdb was not found (run scripts/install-db-test-tools.sh, or set " + BinEnv + ")")
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// Start initialises and starts a cluster in a new temporary directory.
func Start(o Options) (c *Cluster, err error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	sweep(os.TempDir())
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{Dir: dir, Socket: filepath.Join(dir, "sock"), bin: bin}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(processID(os.Getpid())+"\n"), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	owner, err := user.Current()
	if err != nil {
		return nil, err
	}
	c.User = owner.Username
	if os.Geteuid() == 0 {
		u, err := user.Lookup(RunAs)
		if err != nil {
			return nil, fmt.Errorf("running as root, PostgreSQL needs the unprivileged user %q (run scripts/install-db-test-tools.sh): %w", RunAs, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		c.User = RunAs
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	if err := c.run("initdb", "-D", c.data(), "-U", c.User, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, err
	}
	if err := c.run("mkdir", "-m", "0700", c.Socket); err != nil {
		return nil, err
	}
	fsync := "off"
	if o.Durable {
		fsync = "on"
	}
	conf := strings.Join([]string{
		"listen_addresses = ''",
		"unix_socket_directories = '" + c.Socket + "'",
		"unix_socket_permissions = 0700",
		"fsync = " + fsync,
		"full_page_writes = " + fsync,
		"max_connections = 300",
		"shared_buffers = 64MB",
		"log_min_messages = warning",
		"",
	}, "\n")
	if err := c.appendConf(conf); err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		c.Port = 20000 + rand.IntN(40000)
		if err = c.StartServer(); err == nil {
			return c, nil
		}
		if try == 2 {
			return nil, err
		}
	}
}

func (c *Cluster) data() string { return filepath.Join(c.Dir, "data") }

// appendConf adds lines to postgresql.conf (as the cluster's owner).
func (c *Cluster) appendConf(s string) error {
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("\n" + s)
	return errors.Join(err, f.Close())
}

// run runs one of the server's programs (or a plain command) as the
// cluster's owner.
func (c *Cluster) run(prog string, args ...string) error {
	path := prog
	if !strings.Contains(prog, "/") && prog != "mkdir" {
		path = filepath.Join(c.bin, prog)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = c.Dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", prog, strings.Join(args, " "), err, out)
	}
	return nil
}

// StartServer starts the server (again) on c.Port and waits until it
// accepts connections.
func (c *Cluster) StartServer() error {
	return c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.Dir, "log"), "-w", "-t", "60",
		"-o", "-p "+strconv.Itoa(c.Port), "start")
}

// StopServer stops the server; immediate stops it as a crash would (no
// shutdown checkpoint; it recovers from its log when started again).
func (c *Cluster) StopServer(immediate bool) error {
	mode := "fast"
	if immediate {
		mode = "immediate"
	}
	return c.run("pg_ctl", "-D", c.data(), "-m", mode, "-w", "-t", "60", "stop")
}

// Stop stops the server and removes the cluster's files.
func (c *Cluster) Stop() {
	if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err == nil {
		_ = c.StopServer(true)
	}
	_ = os.RemoveAll(c.Dir)
}

// URL returns the connection URL of database db.
func (c *Cluster) URL(db string) string {
	q := url.Values{"host": {c.Socket}, "port": {strconv.Itoa(c.Port)}, "sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", User: url.User(c.User), Path: "/" + db, RawQuery: q.Encode()}).String()
}

// CreateDatabase creates a new, empty database and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context) (name, dsn string, err error) {
	name = fmt.Sprintf("t%d_%d", os.Getpid(), c.n.Add(1))
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0`); err != nil {
		return "", "", err
	}
	return name, c.URL(name), nil
}

// DropDatabase drops database name, ending its connections.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
	return err
}

// ---- one cluster per test process

var (
	shared    *Cluster
	sharedErr error
	once      sync.Once
	mu        sync.Mutex
)

// Shared returns the test process's cluster, starting it on first use.
// When PostgreSQL is missing the test is skipped with a loud message, or
// failed when CI=true.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	once.Do(func() {
		mu.Lock()
		defer mu.Unlock()
		shared, sharedErr = Start(Options{})
	})
	if sharedErr != nil {
		msg := "PostgreSQL is needed and could not be started: " + sharedErr.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED: " + msg)
	}
	return shared
}

// Main runs the tests and stops the shared cluster if one was started.
// A package whose tests use Shared calls it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	if shared != nil {
		shared.Stop()
	}
	mu.Unlock()
	return code
}

// Connect opens a connection of its own to url (a Database), for a test
// that reaches the database as something other than Overseer (a writer of
// forged rows, a holder of locks). It is closed when the test ends.
func Connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Database returns the URL of a fresh, empty database for t on the shared
// cluster. It is a schema of its own in the test process's database (the
// URL sets search_path to it): creating a whole database costs a copy of
// the template, about half a second on a busy machine, a schema nothing.
// What is per database rather than per schema (advisory locks, NOTIFY
// channels) is shared with the process's other tests; tests run one after
// the other unless they say otherwise.
func Database(t testing.TB) string {
	t.Helper()
	c := Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, err := c.schema(ctx)
	if err != nil {
		t.Fatalf("creating a test database: %v", err)
	}
	return dsn
}

var (
	processDB   string
	processDBMu sync.Mutex
)

// schema creates a new schema in the process's test database and returns
// a URL whose search_path is that schema alone.
func (c *Cluster) schema(ctx context.Context) (string, error) {
	processDBMu.Lock()
	defer processDBMu.Unlock()
	if processDB == "" {
		name, _, err := c.CreateDatabase(ctx)
		if err != nil {
			return "", err
		}
		processDB = name
	}
	conn, err := pgx.Connect(ctx, c.URL(processDB))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("s%d", c.n.Add(1))
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+name); err != nil {
		return "", err
	}
	u, err := url.Parse(c.URL(processDB))
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
