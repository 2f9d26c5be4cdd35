package kernel

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/overseer-dev/overseer/internal/limits"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/postgres"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

// DatabaseURLEnv names the database when set: a postgres:// URL, which
// overrides the policy's settings.store (it may carry a password, which
// the policy file must not).
const DatabaseURLEnv = "OVERSEER_DATABASE_URL"

// envURL is $OVERSEER_DATABASE_URL as the process started with it. It is
// read once and removed from the environment, so that the processes this
// one starts (MCP servers, the tools of the agent loop) do not inherit the
// database's password.
var envURL = sync.OnceValue(func() string {
	u := os.Getenv(DatabaseURLEnv)
	os.Unsetenv(DatabaseURLEnv)
	return u
})

// StoreURL returns the database the kernel uses with policy pol: a
// postgres:// URL, or "" for the SQLite file in its home.
func StoreURL(pol *policy.Policy) string {
	if u := envURL(); u != "" {
		return u
	}
	if pol != nil && pol.Settings.Store != "sqlite" {
		return pol.Settings.Store
	}
	return ""
}

// OpenStore opens the store the environment and the policy select (see
// StoreURL): PostgreSQL shared by several instances, or SQLite in home.
func OpenStore(ctx context.Context, home string, pol *policy.Policy) (store.Store, error) {
	u := StoreURL(pol)
	if u == "" {
		return sqlite.OpenContext(ctx, filepath.Join(home, DBFile))
	}
	if !postgres.IsURL(u) {
		// Not repeated: it may hold a password.
		return nil, fmt.Errorf("$%s (or settings.store) is not a postgres:// URL", DatabaseURLEnv)
	}
	st, err := postgres.Open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("opening the shared database: %w", err)
	}
	return st, nil
}

// storeFileSettings are the connection settings that name files the
// database client reads: the password, the service definitions, the
// client's certificate and key, the server's CA (whoever replaces it can
// put a server of its own in the database's place) and its revocations.
var storeFileSettings = []struct{ param, env string }{
	{"passfile", "PGPASSFILE"}, {"servicefile", "PGSERVICEFILE"}, {"sslcert", "PGSSLCERT"},
	{"sslkey", "PGSSLKEY"}, {"sslrootcert", "PGSSLROOTCERT"}, {"sslcrl", "PGSSLCRL"},
}

// StoreFiles returns the files the connection to the shared database
// depends on (none with SQLite): those the URL names, those $PGPASSFILE
// and the like of this process name, and the client's defaults in the home
// (~/.pgpass, ~/.pg_service.conf, ~/.postgresql). They hold the database's
// password or decide which server the instances talk to, so they are as
// much Overseer's as its home: the paths guard protects them.
func StoreFiles(pol *policy.Policy) []string {
	u := StoreURL(pol)
	if u == "" || !postgres.IsURL(u) {
		return nil
	}
	out := []string{"~/.pgpass", "~/.pg_service.conf", "~/.postgresql"}
	add := func(p string) {
		if filepath.IsAbs(p) || strings.HasPrefix(p, "~/") {
			out = append(out, p)
		}
	}
	q := url.Values{}
	if pu, err := url.Parse(u); err == nil {
		q = pu.Query()
	}
	for _, s := range storeFileSettings {
		for _, v := range q[s.param] {
			add(v)
		}
		if v := os.Getenv(s.env); v != "" {
			add(v)
		}
	}
	return out
}

// HasStore reports whether home has a database: the SQLite file, or a
// shared database named by the environment or home's policy.
func HasStore(home string) bool {
	if _, err := os.Stat(filepath.Join(home, DBFile)); err == nil {
		return true
	}
	pol, _, err := LoadPolicy(home, "")
	return err == nil && StoreURL(pol) != ""
}

// DescribeStore says which database the kernel with policy pol uses, for
// people: the SQLite file, or the PostgreSQL server, database and user
// (never a password).
func DescribeStore(home string, pol *policy.Policy) string {
	u := StoreURL(pol)
	if u == "" {
		return filepath.Join(home, DBFile) + " (SQLite)"
	}
	c, err := pgconn.ParseConfig(u)
	if err != nil {
		return "PostgreSQL (the URL does not parse)"
	}
	return fmt.Sprintf("PostgreSQL %s@%s:%d/%s (shared)", c.User, c.Host, c.Port, c.Database)
}

// DatabaseSize is the size of the kernel's database: the SQLite file with
// its write-ahead log, or the bytes Overseer's tables take in PostgreSQL.
func (k *Kernel) DatabaseSize(ctx context.Context) (int64, error) {
	if sz, ok := k.raw.(store.Sizer); ok {
		return sz.Size(ctx)
	}
	return limits.DatabaseSize(filepath.Join(k.Home, DBFile))
}

// Lead waits until this instance leads the task name among the instances
// sharing the store (store.Locker), and returns a channel closed when it
// loses the lead. With a store of its own (SQLite) the instance leads at
// once, until ctx ends.
func (k *Kernel) Lead(ctx context.Context, name string) (<-chan struct{}, error) {
	if l, ok := k.raw.(store.Locker); ok {
		return l.Lead(ctx, name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return ctx.Done(), nil
}

// Shared reports whether the kernel's store is shared by several
// instances (PostgreSQL), rather than the SQLite file in its home.
func (k *Kernel) Shared() bool { return k.shared }

// watch acts at once on the changes other instances commit to a shared
// store: an answer wakes this instance's waiters, a change of the user
// layer reloads it. It runs until ctx ends. Missing a change is not
// dangerous: waiters poll the store, and the daemon reloads the user
// layer every second. listening is closed once the watch listens.
func (k *Kernel) watch(ctx context.Context, w store.Watcher, listening chan<- struct{}) {
	var once sync.Once
	w.Watch(ctx, func(c store.Change) {
		switch c.Kind {
		case store.ChangeApproval:
			k.Gate.Nudge(c.ID)
		case store.ChangeRules:
			_ = k.Engine.Reload(ctx) // a failure is kept by the engine: actions go to a person
		case changeSamples:
			k.takeSamples(c.ID)
		case store.ChangePauses, store.ChangeControls:
			// Another instance paused or resumed an agent, or changed a
			// rate limit or budget cap: the next call reads them again
			// before it is judged (not at the periodic read, a second
			// later, while the paused agent's calls ran here).
			k.pauses.checked.Store(0)
		case store.ChangeState:
			if c.ID == nsBudgetUsage {
				k.kickSpend()
			}
		case store.ChangeResync:
			once.Do(func() { close(listening) })
			k.kickSpend()
			k.Gate.NudgeAll()
			_ = k.Engine.Reload(ctx)
		}
	})
}
