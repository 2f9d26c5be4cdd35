package kernel

// The store guard: with a shared PostgreSQL database, a database client an
// agent runs against that database (psql, pg_dump, a driver in inline
// code) touches Overseer's controls and evidence as a write of its SQLite
// file would, and is blocked. The credentials are kept from the agents
// (StoreFiles); this stops the ways that need none (trust or peer
// authentication, a client certificate of the agent's user) or bring
// their own.

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/lazyre"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store/postgres"
)

// dbTarget is where a database connection goes, as far as it was written.
type dbTarget struct {
	hosts   []string
	port    int
	db      string
	service string
}

// storeGuard blocks connections to the shared database.
type storeGuard struct{ t dbTarget }

// StoreGuard returns the store guard for the policy's shared database, or
// nil with the SQLite file.
func StoreGuard(pol *policy.Policy) guard.Guard {
	u := StoreURL(pol)
	if u == "" || !postgres.IsURL(u) {
		return nil
	}
	t, ok := parseDBURL(u)
	if !ok || t.service == "" && (len(t.hosts) == 0 || t.db == "") {
		return nil
	}
	return storeGuard{t}
}

// Name implements guard.Guard.
func (storeGuard) Name() string { return "store" }

// dbClients are the programs whose arguments name a PostgreSQL database.
var dbClients = map[string]bool{"psql": true, "pg_dump": true, "pg_dumpall": true, "pg_restore": true, "pgcli": true,
	"vacuumdb": true, "reindexdb": true, "clusterdb": true, "dropdb": true, "pg_amcheck": true, "pgbench": true}

var (
	dbURLRe = lazyre.New(`postgres(?:ql)?://[^\s'"\x60)]+`)
	// Connection strings, drivers' keyword arguments and libpq's variables
	// (PGHOST=… PGDATABASE=… psql).
	connHostRe   = lazyre.New(`(?i)\b(?:pg)?host\s*[=:]\s*['"]?([^\s'",;)}]+)`)
	connDBRe     = lazyre.New(`(?i)\b(?:pg)?(?:db(?:name)?|database)\s*[=:]\s*['"]?([^\s'",;)}]+)`)
	connServiceR = lazyre.New(`(?i)\b(?:pg)?service\s*=\s*['"]?([^\s'",;)}]+)`)
)

// Check implements guard.Guard.
func (g storeGuard) Check(_ context.Context, a *action.Action) ([]guard.Finding, error) {
	var found []dbTarget
	for _, c := range a.Facts.Commands {
		if dbClients[strings.ToLower(c.Name)] {
			found = append(found, clientTarget(c.Args))
		}
	}
	// A driver in inline code, a URL or a connection string anywhere.
	if cmd, _ := a.Args["command"].(string); cmd != "" {
		for _, m := range dbURLRe.FindAllString(cmd, -1) {
			if t, ok := parseDBURL(m); ok {
				found = append(found, t)
			}
		}
		t := dbTarget{}
		if m := connHostRe.FindStringSubmatch(cmd); m != nil {
			t.hosts = []string{m[1]}
		}
		if m := connDBRe.FindStringSubmatch(cmd); m != nil {
			t.db = m[1]
		}
		if m := connServiceR.FindStringSubmatch(cmd); m != nil {
			t.service = m[1]
		}
		found = append(found, t)
	}
	for _, t := range found {
		if g.matches(t) {
			return []guard.Finding{{Check: "store.shared-database", Level: action.Block, Hard: true,
				Message: "connects to Overseer's shared database, which holds its approvals, rules and audit log"}}, nil
		}
	}
	return nil, nil
}

// matches reports whether t, as written, names the shared database: its
// service, or one of its hosts (and port, when written) and its database.
func (g storeGuard) matches(t dbTarget) bool {
	if t.service != "" && g.t.service != "" && strings.EqualFold(t.service, g.t.service) {
		return true
	}
	if t.db == "" || g.t.db == "" || t.db != g.t.db || t.port != 0 && g.t.port != 0 && t.port != g.t.port {
		return false
	}
	for _, h := range t.hosts {
		for _, gh := range g.t.hosts {
			if strings.EqualFold(strings.TrimSuffix(h, "."), strings.TrimSuffix(gh, ".")) {
				return true
			}
		}
	}
	return false
}

// parseDBURL reads a postgres:// URL (or a key=value connection string)
// without consulting the environment or any file.
func parseDBURL(s string) (dbTarget, bool) {
	var t dbTarget
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return connInfo(s), true
	}
	u, err := url.Parse(s)
	if err != nil {
		return t, false
	}
	for _, hp := range strings.Split(u.Host, ",") {
		h, p := hp, ""
		if i := strings.LastIndex(hp, ":"); i >= 0 && !strings.HasSuffix(hp, "]") {
			h, p = hp[:i], hp[i+1:]
		}
		if h != "" {
			t.hosts = append(t.hosts, strings.Trim(h, "[]"))
		}
		if n, err := strconv.Atoi(p); err == nil && t.port == 0 {
			t.port = n
		}
	}
	t.db = strings.TrimPrefix(u.Path, "/")
	q := u.Query()
	for _, h := range q["host"] {
		t.hosts = append(t.hosts, strings.Split(h, ",")...)
	}
	if v := q.Get("port"); v != "" {
		if n, err := strconv.Atoi(strings.Split(v, ",")[0]); err == nil {
			t.port = n
		}
	}
	if v := q.Get("dbname"); v != "" {
		t.db = v
	}
	t.service = q.Get("service")
	return t, true
}

// connInfo reads a key=value connection string.
func connInfo(s string) dbTarget {
	var t dbTarget
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `'"`)
		switch strings.ToLower(k) {
		case "host", "hostaddr":
			t.hosts = append(t.hosts, strings.Split(v, ",")...)
		case "port":
			t.port, _ = strconv.Atoi(strings.Split(v, ",")[0])
		case "dbname":
			t.db = v
		case "service":
			t.service = v
		}
	}
	return t
}

// clientTarget reads where a database client's arguments connect: -h/--host,
// -p/--port, -d/--dbname (a name, a URL or a connection string), --service,
// or the first operand.
func clientTarget(args []string) dbTarget {
	var t dbTarget
	merge := func(o dbTarget) {
		t.hosts = append(t.hosts, o.hosts...)
		if o.port != 0 {
			t.port = o.port
		}
		if o.db != "" {
			t.db = o.db
		}
		if o.service != "" {
			t.service = o.service
		}
	}
	dbArg := func(v string) {
		if strings.Contains(v, "=") || strings.Contains(v, "://") {
			if o, ok := parseDBURL(v); ok {
				merge(o)
			}
			return
		}
		if t.db == "" {
			t.db = v
		}
	}
	operand := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch {
		case a == "-h" || a == "--host":
			t.hosts = append(t.hosts, next())
		case strings.HasPrefix(a, "--host="):
			t.hosts = append(t.hosts, strings.TrimPrefix(a, "--host="))
		case strings.HasPrefix(a, "-h") && len(a) > 2:
			t.hosts = append(t.hosts, a[2:])
		case a == "-p" || a == "--port":
			t.port, _ = strconv.Atoi(next())
		case strings.HasPrefix(a, "--port="):
			t.port, _ = strconv.Atoi(strings.TrimPrefix(a, "--port="))
		case a == "-d" || a == "--dbname":
			dbArg(next())
		case strings.HasPrefix(a, "--dbname="):
			dbArg(strings.TrimPrefix(a, "--dbname="))
		case strings.HasPrefix(a, "-d") && len(a) > 2:
			dbArg(a[2:])
		case a == "-c" || a == "--command" || a == "-f" || a == "--file" || a == "-U" || a == "--username" ||
			a == "-o" || a == "--output" || a == "-v" || a == "--set" || a == "-t" || a == "--table" || a == "-n" ||
			a == "--schema" || a == "-F" || a == "--format" || a == "-L" || a == "--log-file":
			next()
		case strings.HasPrefix(a, "-"):
		case !operand:
			operand = true
			dbArg(a)
		}
	}
	return t
}
