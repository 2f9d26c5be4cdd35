package shell

// Backend and operations work on the project's own local services: read-only
// psql queries and golang-migrate migrations against the project's local
// PostgreSQL database, and what terraform plan runs. The general rules
// (psql: confirm for a read, approve for a write; migrate: an unknown
// program; terraform plan: read-only) stay for everything these narrow
// cases do not prove harmless.

import (
	"errors"
	"io/fs"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/lazyre"
	"go.yaml.in/yaml/v3"
)

// registerInfra adds the handlers of this file.
func registerInfra() {
	handlers["migrate"] = (*analyzer).migrateCmd
	handlers["terraform"] = (*analyzer).terraformCmd
	handlers["tofu"] = (*analyzer).terraformCmd
	handlers["kubectl"] = (*analyzer).kubeLocalCmd
	handlers["helm"] = (*analyzer).kubeLocalCmd
}

// psqlFlags are psql's options without a value that change nothing but
// the output's form, the echo of queries, the transaction and the password
// prompt; psqlFlagLetters are their one-letter forms, which may be grouped
// (-At).
var psqlFlags = setOf("--no-align", "--tuples-only", "--expanded", "--no-psqlrc", "--quiet", "--csv", "--html",
	"--echo-all", "--echo-queries", "--echo-errors", "--echo-hidden", "--single-transaction", "--no-password",
	"--password", "--field-separator-zero", "--record-separator-zero", "--no-readline", "--single-line")

const psqlFlagLetters = "AtxXqHaeEbS1wWnz0"

// psqlPset are the \pset options -P may set: the output's form only (a
// pager runs a program).
var psqlPset = setOf("format", "border", "null", "footer", "tuples_only", "expanded", "fieldsep", "recordsep",
	"title", "columns", "linestyle", "unicode_border_linestyle", "numericlocale", "csv_fieldsep")

// psqlVars are the variables -v may set for a read of the project's local
// database.
var psqlVars = setOf("ON_ERROR_STOP", "ECHO", "ECHO_HIDDEN", "QUIET", "VERBOSITY", "SHOW_CONTEXT", "FETCH_COUNT")

// pgEnvAllowed are the libpq variables that may be set for a psql that
// reads the project's local database: none of them chooses another
// server, a service file or a command.
var pgEnvAllowed = setOf("PGPASSWORD", "PGUSER", "PGDATABASE", "PGCONNECT_TIMEOUT", "PGAPPNAME", "PGSSLMODE",
	"PGCLIENTENCODING", "PGTZ", "PGDATESTYLE")

// pgOutside finds SQL that reaches outside the database, ends other
// sessions, runs SQL given as text or a program on the server: a
// read-only statement that calls one is not a read of the project's data,
// and a migration that holds one is not a plain change of its tables.
var pgOutside = lazyre.New(`(?i)\b(pg_read\w*|pg_ls_\w+|pg_stat_file|lo_\w+|dblink\w*|pg_terminate_backend|pg_cancel_backend|pg_reload_conf|pg_rotate_logfile|pg_file_\w+|pg_promote|pg_switch_wal|pg_create_\w+|pg_drop_\w+|pg_replication_\w+|pg_logical_\w+|pg_advisory\w*|set_config|\w*_to_xml\w*|pg_import_\w+|pg_backup_\w+|pg_log_\w+|program|alter\s+system|\w+_command|plpython\w*|plperlu|pltclu|plsh|postgres_fdw|file_fdw)\b`)

// pgEscapedName finds a Unicode-escaped identifier or string (U&"pg\005fread\005ffile",
// with UESCAPE another escape character): a function name pgOutside would
// find spelled so that it does not.
var pgEscapedName = lazyre.New(`(?i)\bu&["']|\buescape\b`)

// pgLocalMeta are the psql meta-commands a read of the project's local
// database may use: descriptions, listings and output settings.
func pgLocalMeta(cmd string) bool {
	switch {
	case strings.HasPrefix(cmd, `\d`) && !strings.HasPrefix(cmd, `\dconfig`):
		return true
	}
	switch cmd {
	case `\l`, `\l+`, `\list`, `\x`, `\timing`, `\conninfo`, `\q`, `\quit`, `\echo`, `\dn`, `\encoding`:
		return true
	}
	return false
}

// pgLocalReads reports whether an SQL text only reads the database it is
// run in: every statement reads (sqlWrites), calls no function that reaches
// outside it, and the meta-commands are pgLocalMeta's.
func pgLocalReads(sql string) bool {
	if sqlWrites(sql) {
		return false
	}
	text := stripSQLComments(sql)
	if pgOutside.MatchString(text) || pgEscapedName.MatchString(text) {
		return false
	}
	for _, st := range strings.FieldsFunc(text, func(r rune) bool { return r == ';' || r == '\n' }) {
		// A meta-command may follow a statement on its line (select 1 \gx).
		if i := strings.IndexByte(st, '\\'); i >= 0 {
			for _, m := range strings.Split(st[i:], `\`)[1:] {
				f := strings.Fields(m)
				if len(f) == 0 || !pgLocalMeta(`\`+f[0]) {
					return false
				}
			}
		}
	}
	return true
}

// pgInsertOther finds, in SQL made only of INSERT statements, a word that
// changes, removes or runs something besides adding rows: an upsert's DO
// UPDATE, a data-modifying WITH, a statement hidden in a string.
var pgInsertOther = lazyre.New(`(?i)\b(update|delete|drop|alter|create|truncate|merge|grant|revoke|copy|call|replace|execute|lock|rename|set|reset|load|vacuum|reindex|security|owner|returning)\b`)

// pgLocalInserts reports whether an SQL text only adds rows: every
// statement is an INSERT INTO (BEGIN and COMMIT around them), none of them
// names a word of pgInsertOther or a function that reaches outside the
// database, and the meta-commands are pgLocalMeta's. Seed data for the
// project's local database is such a text; a delete, an update, a schema
// change or a reset is not.
func pgLocalInserts(sql string) bool {
	text := stripSQLComments(sql)
	if pgOutside.MatchString(text) || pgInsertOther.MatchString(text) || pgEscapedName.MatchString(text) ||
		strings.Contains(text, "$$") {
		return false
	}
	inserts := 0
	for _, st := range sqlStatements(text) {
		st = strings.TrimSpace(st)
		if st == "" {
			continue
		}
		f := strings.Fields(strings.ToLower(st))
		switch {
		case strings.HasPrefix(f[0], `\`):
			if !pgLocalMeta(f[0]) {
				return false
			}
		case f[0] == "begin" || f[0] == "commit" || f[0] == "end":
			if len(f) > 2 {
				return false
			}
		case f[0] == "insert" && len(f) > 1 && f[1] == "into":
			// A backslash in the statement may start a meta-command psql
			// runs there (\! sh, \g |cmd, \o |cmd in a file; a second -c
			// joined to this one): not previewed.
			if strings.ContainsRune(st, '\\') {
				return false
			}
			inserts++
		default:
			return false
		}
	}
	return inserts > 0
}

// localPostgres returns the port of the PostgreSQL server a psql command
// connects to when it is one the project declares on this machine: every
// host named (-h, a URI's or a connection string's host) is localhost,
// 127.0.0.1 or ::1, at least one is named (PGHOST and the service files are
// not followed), the port is one of the project's files declares (not
// Overseer's), no option sends output to a file or runs a pager or an
// editor, and no start-up file (~/.psqlrc) runs first unless -X skips it.
// ok is false otherwise.
func (a *analyzer) localPostgres(s *segCtx) (port int, ok bool) {
	if s.name != "psql" || a.env.Cwd == "" || a.env.Home == "" || !a.pgEnvPlain(s) {
		return 0, false
	}
	var hosts, ports []string
	var dbs []string
	noRC := false
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		if x.dyn || x.glob {
			return 0, false
		}
		v := x.val
		name, val, hasVal := v, "", false
		if strings.HasPrefix(v, "--") {
			name, val, hasVal = strings.Cut(v, "=")
		} else if len(v) > 2 && strings.HasPrefix(v, "-") && strings.ContainsRune("hpUdcfvFRP", rune(v[1])) {
			name, val, hasVal = v[:2], v[2:], true
		}
		switch name {
		case "-h", "--host", "-p", "--port", "-U", "--username", "-d", "--dbname", "-c", "--command", "-f", "--file",
			"-v", "--set", "--variable", "-F", "--field-separator", "-R", "--record-separator", "-P", "--pset":
			if !hasVal {
				if j+1 >= len(s.args) || s.args[j+1].dyn || s.args[j+1].glob {
					return 0, false
				}
				j++
				val = s.args[j].val
			}
			switch name {
			case "-h", "--host":
				hosts = append(hosts, val)
			case "-p", "--port":
				ports = append(ports, val)
			case "-d", "--dbname":
				dbs = append(dbs, val)
			case "-P", "--pset":
				k, _, _ := strings.Cut(val, "=")
				if !psqlPset[k] {
					return 0, false
				}
			case "-v", "--set", "--variable":
				// psql's variables that change how it reports, no more: a
				// variable may be interpolated into the SQL (:name).
				k, _, _ := strings.Cut(strings.ToUpper(val), "=")
				if !psqlVars[k] {
					return 0, false
				}
			}
			continue
		}
		switch {
		case psqlFlags[v]:
			noRC = noRC || v == "--no-psqlrc"
		case strings.HasPrefix(v, "-") && len(v) > 1 && v[1] != '-' && strings.Trim(v[1:], psqlFlagLetters) == "":
			noRC = noRC || strings.Contains(v, "X")
		case strings.HasPrefix(v, "-"):
			return 0, false // -o, -L, --log-file and what is not known
		default:
			dbs = append(dbs, v)
		}
	}
	// The first operand is the database (or a connection string), the
	// second the user; a connection string may name hosts and a port.
	for i, db := range dbs {
		if i > 0 && !strings.Contains(db, "=") && !strings.Contains(db, "://") {
			continue // a user name
		}
		h, p, ok := pgConnTarget(db)
		if !ok {
			return 0, false
		}
		hosts = append(hosts, h...)
		ports = append(ports, p...)
	}
	if len(hosts) == 0 {
		return 0, false
	}
	for _, h := range hosts {
		if !loopbackHost(h) {
			return 0, false
		}
	}
	port = 5432
	for i, p := range ports {
		n, err := strconv.Atoi(p)
		if err != nil || !isDigits(p) || n <= 0 || n > 65535 || i > 0 && n != port {
			return 0, false
		}
		port = n
	}
	if a.self().DaemonPort(uint16(port)) || !a.projectDeclaresPort(port) {
		return 0, false
	}
	if !noRC && a.homeHas(".psqlrc") {
		return 0, false
	}
	return port, true
}

// homeHas reports whether the home holds a file whose name starts with
// prefix (.psqlrc, .psqlrc-16 …), or cannot be listed.
func (a *analyzer) homeHas(prefix string) bool {
	entries, err := fs.ReadDir(a.fileSystem(), fsName(a.env.Home))
	if err != nil {
		return true
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			return true
		}
	}
	return false
}

// pgEnvPlain reports whether the environment the command sets names no
// other server, service, start-up file, pager or editor for a PostgreSQL
// client.
func (a *analyzer) pgEnvPlain(s *segCtx) bool {
	plain := func(k string) bool {
		u := strings.ToUpper(k)
		return !(strings.HasPrefix(u, "PG") && !pgEnvAllowed[u] || strings.HasPrefix(u, "PSQL") ||
			u == "PAGER" || u == "EDITOR" || u == "VISUAL" || u == "SHELL")
	}
	// The shell's variables (PGHOST=… psql, export PGSERVICE=…), those a
	// wrapper sets (env PSQLRC=… psql) and the environment variables the
	// guard follows.
	for _, k := range s.envNames {
		if !plain(k) {
			return false
		}
	}
	for k := range a.vars {
		if !plain(k) {
			return false
		}
	}
	for _, m := range []map[string]envVal{a.envSet, a.cmdEnv} {
		for k := range m {
			if !plain(k) {
				return false
			}
		}
	}
	return true
}

// loopbackHost reports whether h names this machine's loopback interface.
func loopbackHost(h string) bool {
	switch strings.ToLower(strings.Trim(h, "[]")) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// pgURIParams are the parameters of a connection URI or string that do
// not choose where it connects or what runs there.
var pgURIParams = setOf("sslmode", "connect_timeout", "application_name", "user", "password", "dbname",
	"client_encoding", "target_session_attrs", "x-migrations-table", "x-multi-statement", "search_path")

// pgConnTarget returns the hosts and ports a database operand names: a
// plain database name names none, a postgres:// URI or a key=value string
// its host and port. ok is false for what names a service, a host address,
// options or a form not known.
func pgConnTarget(db string) (hosts, ports []string, ok bool) {
	switch {
	case strings.Contains(db, "://"):
		u, err := url.Parse(db)
		if err != nil || u.Opaque != "" {
			return nil, nil, false
		}
		switch u.Scheme {
		case "postgres", "postgresql": // the forms the store guard also reads
		default:
			return nil, nil, false
		}
		if u.Host == "" || strings.Contains(u.Host, ",") {
			return nil, nil, false
		}
		for k := range u.Query() {
			if !pgURIParams[k] {
				return nil, nil, false
			}
		}
		hosts = append(hosts, u.Hostname())
		if p := u.Port(); p != "" {
			ports = append(ports, p)
		}
		return hosts, ports, true
	case strings.Contains(db, "="):
		if strings.ContainsAny(db, `'"\`) {
			return nil, nil, false
		}
		for _, kv := range strings.Fields(db) {
			k, v, found := strings.Cut(kv, "=")
			if !found {
				return nil, nil, false
			}
			switch k {
			case "host":
				if strings.Contains(v, ",") {
					return nil, nil, false
				}
				hosts = append(hosts, v)
			case "port":
				ports = append(ports, v)
			default:
				if !pgURIParams[k] {
					return nil, nil, false
				}
			}
		}
		return hosts, ports, true
	}
	return nil, nil, db != "" && !strings.ContainsAny(db, "/@")
}

// projectFileText returns the text of a regular file inside the agent's
// working tree (links followed, the target inside too) that is not a
// secret, when it holds at most max bytes.
func (a *analyzer) projectFileText(p string, max int64) (string, bool) {
	abs, ok := a.abs(p)
	if !ok || !path.IsAbs(abs) || a.env.Cwd == "" || !a.cwdKnown {
		return "", false
	}
	real, root, ok := a.realInProject(abs)
	if !ok || real == root {
		return "", false
	}
	b, ok := a.readRegular(fsName(real), max)
	return string(b), ok
}

// realInProject resolves abs and the agent's working directory through
// their links; ok is false when abs is not inside it or is a secret.
func (a *analyzer) realInProject(abs string) (real, root string, ok bool) {
	rfs, isLink := a.fileSystem().(fs.ReadLinkFS)
	if !isLink {
		return "", "", false
	}
	real, ok1 := resolveDots(rfs, abs, 0)
	root, ok2 := resolveDots(rfs, path.Clean(a.env.Cwd), 0)
	if !ok1 || !ok2 || !action.Within(root, real) || a.r.secret(real) {
		return "", "", false
	}
	return real, root, true
}

// migrateCmd judges golang-migrate: up, down N, goto V and version with the
// project's own migration files against the project's local PostgreSQL
// database are notify; everything else is left to the rules (an unknown
// program: confirm), and a drop or a force reaches a person.
func (a *analyzer) migrateCmd(s *segCtx) bool {
	var dir, db string
	var ops []arg
	odd := false
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		if x.dyn || x.glob {
			return false
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(x.val, "-"), "=")
		switch name {
		case "path", "source", "database", "lock-timeout", "prefetch":
			if !hasVal {
				if j+1 >= len(s.args) || s.args[j+1].dyn || s.args[j+1].glob {
					return false
				}
				j++
				val = s.args[j].val
			}
			switch name {
			case "path":
				dir = val
			case "source":
				d, ok := strings.CutPrefix(val, "file://")
				if !ok {
					return false
				}
				dir = d
			case "database":
				db = val
			}
			continue
		case "verbose":
			continue
		}
		if strings.HasPrefix(x.val, "-") {
			odd = true // drop -f, or an option not known
			continue
		}
		ops = append(ops, x)
	}
	if len(ops) == 0 {
		return false
	}
	sub := strings.ToLower(ops[0].val)
	if sub != "drop" && sub != "force" && (odd || dir == "" || db == "") {
		return false
	}
	switch {
	case sub == "drop" || sub == "force":
		a.add(guard.Finding{Check: "shell.sql-write", Level: action.Approve,
			Message: "migrate " + sub + " changes a database outside its migrations: " + clip(joinVals(s.args), 200)})
		return true
	case sub == "down" && len(ops) != 2:
		return false // every down migration: the rules
	case sub == "up" && len(ops) <= 2, sub == "down", sub == "goto" && len(ops) == 2, sub == "version" && len(ops) == 1:
		for _, o := range ops[1:] {
			if !isDigits(o.val) {
				return false
			}
		}
	default:
		return false
	}
	hosts, ports, ok := pgConnTarget(db)
	if !ok || len(hosts) != 1 || !loopbackHost(hosts[0]) || !a.pgEnvPlain(s) {
		return false
	}
	port := 5432
	if len(ports) == 1 {
		n, err := strconv.Atoi(ports[0])
		if err != nil {
			return false
		}
		port = n
	}
	if a.self().DaemonPort(uint16(port)) || !a.projectDeclaresPort(port) {
		return false
	}
	if why := a.migrationsPlain(dir); why != "" {
		a.add(guard.Finding{Check: "shell.sql-write", Level: action.Approve,
			Message: "migrate runs migrations that " + why})
		return true
	}
	a.class("dev-db", action.Notify, "migrate "+sub+" (port "+strconv.Itoa(port)+")")
	return true
}

// maxMigrations bounds the migration files the guard reads.
const maxMigrations = 1024

// migrationsPlain reads the migration files in dir (inside the working
// tree) and returns why they are not plain changes of the database's own
// tables ("" when they are): a directory outside the project or unread,
// or SQL that runs a program, reads or writes server files, or connects
// elsewhere.
func (a *analyzer) migrationsPlain(dir string) string {
	abs, ok := a.abs(dir)
	if !ok {
		return "are in a directory the guard cannot place"
	}
	if a.writtenHere(dir) {
		return "the command writes before it runs them"
	}
	real, _, ok := a.realInProject(abs)
	if !ok {
		return "are outside the project"
	}
	entries, err := fs.ReadDir(a.fileSystem(), fsName(real))
	if err != nil || len(entries) > maxMigrations {
		return "the guard cannot read"
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, ok := a.readRegular(fsName(path.Join(real, e.Name())), 1<<20)
		if !ok {
			return "the guard cannot read (" + e.Name() + ")"
		}
		if m := pgOutside.FindString(stripSQLComments(string(b))); m != "" {
			return "reach outside the database (" + e.Name() + ": " + m + ")"
		}
	}
	return ""
}

// terraformRuns are the subcommands that evaluate a configuration's data
// sources and so run what they name.
var terraformRuns = setOf("plan", "refresh", "console", "import", "test")

// tfRunsOrReads finds what a Terraform configuration makes plan run, fetch
// or read beyond the provider's own API calls: an external or http data
// source (and their providers), a local file data source, file functions
// given a path from the root or the home, and provider installations
// overridden in the configuration.
var tfRunsOrReads = lazyre.New(`(?i)("external"|"http"|"local_file"|"local_sensitive_file"|hashicorp/external|hashicorp/http|\b(?:file|filebase64|filemd5|filesha1|filesha256|filesha512|filebase64sha256|filebase64sha512|templatefile|fileexists|fileset)\s*\(\s*"\s*[/~]|\bpathexpand\s*\(|\babspath\s*\(|dev_overrides|provisioner\s*"local-exec")`)

// tfModuleSource is a local module's source in a configuration.
var tfModuleSource = lazyre.New(`(?m)^\s*source\s*=\s*"(\.\.?/[^"]*)"`)

// terraformCmd judges terraform plan, refresh, console, import and test by
// the configuration they evaluate: its data sources run on plan, and an
// external data source runs any program, an http one fetches any URL and
// the file functions read any file. A configuration naming one, or one the
// guard cannot read whole, reaches a person; the rules judge the rest.
func (a *analyzer) terraformCmd(s *segCtx) bool {
	dir := "."
	sub := ""
	for _, x := range s.args {
		if x.dyn {
			if sub == "" {
				return false // the rules: a dynamic subcommand
			}
			continue
		}
		if d, ok := strings.CutPrefix(x.val, "-chdir="); ok && sub == "" {
			dir = d
			continue
		}
		if !strings.HasPrefix(x.val, "-") && sub == "" {
			sub = x.val
		}
	}
	if !terraformRuns[sub] {
		return false
	}
	// TF_CLI_ARGS* add arguments (another -chdir), TF_CLI_CONFIG_FILE may
	// override providers with local programs, TF_DATA_DIR moves the
	// installed modules.
	wrapped := map[string]bool{} // env TF_CLI_ARGS=… terraform
	for _, k := range s.envNames {
		wrapped[k] = true
	}
	for _, m := range []map[string]bool{keysOf(a.vars), keysOf(a.envSet), keysOf(a.cmdEnv), wrapped} {
		for k := range m {
			if strings.HasPrefix(k, "TF_CLI_") || k == "TF_DATA_DIR" {
				a.add(guard.Finding{Check: "shell.terraform", Level: action.Confirm,
					Message: "terraform " + sub + " takes arguments or configuration from " + k})
				return false
			}
		}
	}
	if why := a.terraformConfig(dir); why != "" {
		a.add(guard.Finding{Check: "shell.terraform", Level: action.Confirm,
			Message: "terraform " + sub + " evaluates a configuration that " + why})
	}
	return false
}

// maxTerraformFiles bounds the configuration files the guard reads.
const maxTerraformFiles = 512

// terraformConfig returns why the configuration in dir (its .tf and
// .tf.json files, the local modules they name, and the modules init put in
// .terraform/modules) may run, fetch or read more than its providers' API
// ("" when it does not).
func (a *analyzer) terraformConfig(dir string) string {
	abs, ok := a.abs(dir)
	if !ok || !path.IsAbs(abs) {
		return "the guard cannot place"
	}
	// A configuration the command itself writes is not on disk yet.
	for _, f := range a.out.Paths {
		if f.Intent != action.PathRead && (action.Within(abs, f.Path) || strings.HasSuffix(f.Path, ".tf") ||
			strings.HasSuffix(f.Path, ".tf.json") || strings.Contains(f.Path, ".terraform")) {
			return "the command writes before it runs (" + f.Path + ")"
		}
	}
	if _, err := fs.Stat(a.fileSystem(), fsName(abs)); errors.Is(err, fs.ErrNotExist) {
		return "" // no configuration: terraform evaluates nothing
	}
	seen := map[string]bool{}
	queue := []string{path.Clean(abs)}
	files := 0
	// The modules init installed, whatever their source.
	if mods := path.Join(abs, ".terraform", "modules"); a.fileExists(mods) {
		err := fs.WalkDir(a.fileSystem(), fsName(mods), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				queue = append(queue, "/"+p)
				if len(queue) > maxTerraformFiles {
					return fs.SkipAll
				}
			}
			return nil
		})
		if err != nil || len(queue) > maxTerraformFiles {
			return "has more modules than the guard reads"
		}
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if seen[d] {
			continue
		}
		seen[d] = true
		entries, err := fs.ReadDir(a.fileSystem(), fsName(d))
		if err != nil {
			return "the guard cannot read (" + d + ")"
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			n := e.Name()
			if strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json") || strings.HasSuffix(n, ".tftest.hcl") ||
				n == ".terraformrc" || n == "terraform.rc" {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			files++
			if files > maxTerraformFiles {
				return "has more files than the guard reads"
			}
			b, ok := a.readRegular(fsName(path.Join(d, n)), 1<<20)
			if !ok {
				return "the guard cannot read (" + n + ")"
			}
			text := string(b)
			if m := tfRunsOrReads.FindString(text); m != "" {
				return "names " + m + " (" + n + "): it may run a program, fetch a URL or read a file outside the project"
			}
			for _, sm := range tfModuleSource.FindAllStringSubmatch(text, -1) {
				queue = append(queue, path.Clean(path.Join(d, sm[1])))
			}
		}
	}
	return ""
}

// kubeLocalSubs are the kubectl subcommands that change a cluster's
// workloads or reach into them, and are notify on a cluster that runs on
// this machine (kind, k3d) in a namespace of the project's: its state is
// the developer's own and is made again from the project's manifests.
// apply, create, patch and run, which may make a privileged pod (a kind
// node is a privileged container: such a pod reaches the host), delete,
// drain, cordon, debug and edit (an editor) stay with the rules.
var kubeLocalSubs = setOf("scale", "set", "label", "annotate", "rollout", "exec", "port-forward", "wait")

// helmLocalSubs are helm's subcommands that install or upgrade a release,
// notify on a cluster on this machine with a chart of the project's whose
// templates and values make no privileged or host-sharing pod.
var helmLocalSubs = setOf("install", "upgrade")

// kubeSystemNamespace reports whether ns holds the cluster's own
// workloads (kube-proxy and the CNI run privileged there).
func kubeSystemNamespace(ns string) bool {
	return strings.HasPrefix(ns, "kube-") || ns == "local-path-storage"
}

// helmFlags are helm install/upgrade flags without a value that take
// nothing from elsewhere; helmValueOpts take a value.
var helmFlags = setOf("--wait", "--wait-for-jobs", "--atomic", "-i", "--install", "--create-namespace", "--debug",
	"--reuse-values", "--reset-values", "--reset-then-reuse-values", "--cleanup-on-fail", "--force", "--skip-crds",
	"--render-subchart-notes", "--no-hooks", "--take-ownership")

var helmValueOpts = setOf("-f", "--values", "--set", "--set-string", "--set-json", "--version", "--timeout",
	"--description", "-n", "--namespace", "--kube-context")

// kubeGlobalOpts are the options kubeLocalCmd takes before the
// subcommand besides the context and namespace: log verbosity and a
// timeout.
var kubeGlobalOpts = setOf("-v", "--v", "--request-timeout", "--debug")

// kubeFileOpts are kubectl's and helm's options that write a file where
// they name (klog's log file, a profile) or read their configuration from
// one (helm's repositories and registries).
var kubeFileOpts = setOf("--log-file", "--log_file", "--log-dir", "--log_dir", "--profile-output", "--cache-dir",
	"--registry-config", "--repository-config", "--repository-cache", "--burst-limit")

// kubeEnvSet reports whether the command sets a variable that chooses the
// cluster or the way to it: KUBECONFIG (another kubeconfig), HOME (another
// ~/.kube/config) or a proxy (a loopback-looking server reached through
// another machine), in the environment, on the command or through a
// wrapper (env NAME=v kubectl).
func (a *analyzer) kubeEnvSet(s *segCtx) bool {
	names := slices.Clone(s.envNames)
	for _, m := range []map[string]envVal{a.envSet, a.cmdEnv} {
		for n := range m {
			names = append(names, n)
		}
	}
	for n := range a.vars {
		names = append(names, n)
	}
	for _, n := range names {
		u := strings.ToUpper(n)
		if u == "KUBECONFIG" || u == "HOME" || strings.HasSuffix(u, "_PROXY") && u != "NO_PROXY" {
			return true
		}
	}
	return false
}

// kubeLocalCmd judges kubectl and helm commands that act on a cluster on
// this machine: the context is named on the command (--context,
// --kube-context) and ~/.kube/config gives it a cluster whose API server
// is on this machine (see kubeServer); the namespace is named and is not
// one of the cluster's own (for kubectl apply: every object's, see
// kubeApplyPlain); no option names another kubeconfig, server, user or
// token, and KUBECONFIG is not set by the command. It reports whether it
// judged the segment; the rules judge the rest.
func (a *analyzer) kubeLocalCmd(s *segCtx) bool {
	ctxOpt, subs := "--context", kubeLocalSubs
	if s.name == "helm" {
		ctxOpt, subs = "--kube-context", helmLocalSubs
	}
	var ctx, sub, ns string
	var ops, values, sets, manifests, kustomize []string
	recursive := false
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		if x.dyn || x.glob {
			return false
		}
		v := x.val
		if sub != "" && s.name == "kubectl" {
			if v == "--" {
				if sub == "apply" {
					return false
				}
				break // kubectl exec POD -- CMD: the command runs in the pod
			}
			if n, val, ok := strings.Cut(v, "="); ok && n == "--address" {
				if !loopbackList(val) {
					return false // port-forward on every interface
				}
			} else if v == "--address" && (j+1 >= len(s.args) || !loopbackList(s.args[j+1].val)) {
				return false
			}
		}
		name, val, hasVal := strings.Cut(v, "=")
		if len(v) > 2 && strings.HasPrefix(v, "-n") && v[2] != '-' {
			name, val, hasVal = "-n", v[2:], true
		}
		switch name {
		case "--kubeconfig", "-s", "--server", "--cluster", "--user", "--token", "--as", "--as-group",
			"--certificate-authority", "--client-certificate", "--client-key", "--kube-apiserver", "--kube-token",
			"--kube-as-user", "--kube-as-group", "--kube-ca-file", "--kube-insecure-skip-tls-verify", "--insecure-skip-tls-verify",
			"-A", "--all-namespaces":
			return false
		case ctxOpt, "-n", "--namespace", "-l", "--selector", "-f", "--filename", "-k", "--kustomize", "--values", "--set",
			"--set-string", "--set-json":
			if !hasVal {
				if j+1 >= len(s.args) || s.args[j+1].dyn || s.args[j+1].glob {
					return false
				}
				j++
				val = s.args[j].val
			}
			switch {
			case name == ctxOpt:
				if ctx != "" && ctx != val {
					return false
				}
				ctx = val
			case name == "-n" || name == "--namespace":
				if ns != "" && ns != val {
					return false
				}
				ns = val
			case s.name == "helm" && (name == "-f" || name == "--values"):
				values = append(values, strings.Split(val, ",")...) // helm splits at commas too
			case s.name == "helm" && strings.HasPrefix(name, "--set"):
				sets = append(sets, val)
			case s.name == "kubectl" && (name == "-f" || name == "--filename"):
				// A list of names, split at commas as CSV (-f a.yaml,b):
				// a file named "a.yaml,b" is two to kubectl.
				if strings.ContainsRune(val, '"') {
					return false
				}
				manifests = append(manifests, strings.Split(val, ",")...)
			case s.name == "kubectl" && (name == "-k" || name == "--kustomize"):
				kustomize = append(kustomize, val)
			}
			continue
		}
		if kubeFileOpts[name] || sub == "" && strings.HasPrefix(v, "-") && !kubeGlobalOpts[name] {
			// --log-file, --profile-output: a file written anywhere;
			// another option before the subcommand: not known here.
			return false
		}
		if s.name == "helm" && sub != "" {
			switch {
			case helmFlags[v]:
			case helmValueOpts[name]:
				if !hasVal {
					j++
				}
			case strings.HasPrefix(v, "-"):
				return false // --post-renderer, --repo, --set-file, --dependency-update …
			default:
				ops = append(ops, v)
			}
			continue
		}
		if s.name == "kubectl" && sub == "apply" {
			switch {
			case v == "-R" || v == "--recursive":
				recursive = true
			case kubeApplyFlags[name] || kubeApplyValueOpts[name] && hasVal:
			case kubeApplyValueOpts[name]:
				j++
			default:
				// --prune, --selector with prune, edit-last-applied, an
				// operand, an option not known: the rules judge it.
				return false
			}
			continue
		}
		if sub == "" && !strings.HasPrefix(v, "-") {
			sub = v
		}
	}
	apply := s.name == "kubectl" && sub == "apply"
	if !apply && !subs[sub] || ctx == "" || !apply && (ns == "" || kubeSystemNamespace(ns)) || a.env.Home == "" {
		return false
	}
	if a.kubeEnvSet(s) {
		return false
	}
	if s.name == "helm" && (len(ops) != 2 || !a.helmChartPlain(ops[1], values, sets)) {
		return false
	}
	if apply && (ns != "" && kubeSystemNamespace(ns) || !a.kubeApplyPlain(manifests, kustomize, recursive, ns)) {
		return false
	}
	server, ok := a.kubeServer(ctx)
	if !ok {
		return false
	}
	if ns == "" {
		ns = "the manifests'"
	}
	a.class("dev-cluster", action.Notify, s.name+" "+sub+" ("+ctx+" at "+server+", namespace "+ns+")")
	a.out.Segments[s.idx].LocalCluster = ctx + " at " + server
	return true
}

// kubeHostAccess finds what makes a pod share the host or its devices.
var kubeHostAccess = lazyre.New(`(?i)\b(privileged|hostPath|hostPID|hostIPC|hostNetwork|hostUsers|procMount|SYS_ADMIN|SYS_MODULE|SYS_PTRACE|SYS_RAWIO|DAC_READ_SEARCH)\b`)

// maxChartFiles bounds the files of a chart the guard reads.
const maxChartFiles = 512

// helmChartPlain reports whether chart is a directory of the project whose
// files (templates, values, its own subcharts unpacked) and the values
// files and --set values given make no privileged or host-sharing pod; a
// packaged subchart cannot be read.
func (a *analyzer) helmChartPlain(chart string, values, sets []string) bool {
	for _, v := range sets {
		// --set escapes a character with a backslash (host\PID is hostPID).
		if kubeHostAccess.MatchString(strings.ReplaceAll(v, `\`, "")) {
			return false
		}
	}
	for _, f := range values {
		text, ok := a.projectFileText(f, 1<<20)
		if !ok || a.writtenHere(f) || kubeRisky([]byte(text)) { // as YAML decodes it too: "host\x50ID"
			return false
		}
	}
	abs, ok := a.abs(chart)
	if !ok || a.writtenHere(chart) {
		return false
	}
	real, root, ok := a.realInProject(abs)
	if !ok || real == root {
		return false
	}
	files, plain := 0, true
	err := fs.WalkDir(a.fileSystem(), fsName(real), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		files++
		if files > maxChartFiles || strings.HasSuffix(p, ".tgz") || strings.HasSuffix(p, ".tar.gz") || !d.Type().IsRegular() {
			plain = false
			return fs.SkipAll
		}
		b, ok := a.readRegular(p, 1<<20)
		// The chart's values and other YAML outside its templates are
		// read as YAML decodes them (escapes); templates by their text.
		yamlFile := (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) && !strings.Contains(p, "/templates/")
		if !ok || kubeHostAccess.Match(b) || yamlFile && kubeRisky(b) {
			plain = false
			return fs.SkipAll
		}
		return nil
	})
	return err == nil && plain && files > 0
}

// writtenHere reports whether the command writes p, or something inside
// it, before the segment being judged: the file on disk is not yet what
// the segment reads.
func (a *analyzer) writtenHere(p string) bool {
	abs, ok := a.abs(p)
	if !ok {
		return true
	}
	for _, f := range a.out.Paths {
		if f.Intent != action.PathRead && (action.Within(abs, f.Path) || f.Path == abs) {
			return true
		}
	}
	return false
}

// loopbackList reports whether a port-forward's --address list names only
// the loopback interface.
func loopbackList(v string) bool {
	for _, h := range strings.Split(v, ",") {
		if !loopbackHost(h) {
			return false
		}
	}
	return v != ""
}

// kubeconfig is the part of a kubeconfig file that places a context.
type kubeconfig struct {
	Clusters []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server string `yaml:"server"`
			Proxy  string `yaml:"proxy-url"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

// kubeServer returns the API server of context ctx in ~/.kube/config when
// it is on this machine (see localServerHost) and reached without a proxy:
// a cluster on this machine, whatever the context is called (a context
// named kind-x may point anywhere). The first entry of a name counts, as
// kubectl reads it.
func (a *analyzer) kubeServer(ctx string) (string, bool) {
	b, ok := a.readRegular(fsName(path.Join(a.env.Home, ".kube", "config")), 1<<20)
	if !ok {
		return "", false
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return "", false
	}
	cluster := ""
	for _, c := range kc.Contexts {
		if c.Name == ctx {
			cluster = c.Context.Cluster
			break
		}
	}
	if cluster == "" {
		return "", false
	}
	for _, c := range kc.Clusters {
		if c.Name != cluster {
			continue
		}
		u, err := url.Parse(c.Cluster.Server)
		if err != nil || u.Scheme != "https" && u.Scheme != "http" || !a.localServerHost(u.Hostname()) || u.User != nil ||
			c.Cluster.Proxy != "" {
			return "", false
		}
		return u.Host, true
	}
	return "", false
}

// localServerHost reports whether an API server's host is this machine:
// the loopback interface (kind, k3d, minikube's docker driver through its
// published port), 0.0.0.0 (k3d's older kubeconfigs: a connection to it
// reaches this machine), or Docker Desktop's kubernetes.docker.internal
// when /etc/hosts gives that name a loopback address. A private address
// of a docker network is not taken: a remote cluster may have one too.
func (a *analyzer) localServerHost(h string) bool {
	switch strings.ToLower(h) {
	case "0.0.0.0":
		return true
	case "kubernetes.docker.internal":
		b, ok := a.readRegular("etc/hosts", 1<<20)
		if !ok {
			return false
		}
		found := false
		for line := range strings.Lines(string(b)) {
			line, _, _ = strings.Cut(line, "#")
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			for _, n := range f[1:] {
				if strings.EqualFold(n, h) {
					if !loopbackHost(f[0]) && !strings.HasPrefix(f[0], "127.") {
						return false // a name any entry sends elsewhere
					}
					found = true
				}
			}
		}
		return found
	}
	return loopbackHost(h)
}

// keysOf returns the names of a map of variables.
func keysOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// isTerraformFile reports whether p is a Terraform configuration file.
func isTerraformFile(p string) bool {
	l := strings.ToLower(p)
	return strings.HasSuffix(l, ".tf") || strings.HasSuffix(l, ".tf.json")
}

// terraformWriteFindings judges a file tool's write or edit of a Terraform
// file by the text it leaves: a data source that runs a program, fetches a
// URL or reads a file outside the project runs at the next plan, the
// person's own in their terminal among them, outside Overseer's view.
func terraformWriteFindings(p, text string) []guard.Finding {
	if m := tfRunsOrReads.FindString(text); m != "" {
		return []guard.Finding{{Check: "shell.terraform", Level: action.Confirm, Hard: true,
			Message: p + " would name " + m + ", which runs a program, fetches a URL or reads a file at the next terraform plan"}}
	}
	return nil
}
