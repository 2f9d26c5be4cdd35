package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/overseer-dev/overseer/internal/kernel"
)

// openExisting opens the kernel of a home that already holds Overseer's
// database, for commands that read what a daemon recorded (approvals, the
// audit log, the policy's history, rules). Opening a home without one
// would silently create an empty database and answer "nothing here"; it
// says what is wrong instead, naming the home of a daemon that runs
// elsewhere when there is one.
func (a *app) openExisting(ctx context.Context) (*kernel.Kernel, error) {
	home, err := a.homeDir()
	if err != nil {
		return nil, err
	}
	if err := checkHome(home, runningDaemons()); err != nil {
		return nil, exit(1, err)
	}
	return a.open(ctx)
}

// warnOtherHome tells, on standard error, that home is new while a daemon
// runs with another home: a command that may create its home (eval,
// explain) still runs, but its answer is not the daemon's.
func (a *app) warnOtherHome(home string) {
	if hasDB(home) {
		return
	}
	if other := otherHomes(home, runningDaemons()); len(other) > 0 {
		fmt.Fprintf(a.stderr, "overseer: note: %s is a new home, but the daemon runs with %s; pass --home %s (or set OVERSEER_HOME) to use its policy and rules\n",
			home, strings.Join(other, ", "), other[0])
	}
}

func hasDB(home string) bool {
	return kernel.HasStore(home)
}

// checkHome returns an error when home holds no database; daemons are the
// homes of the daemons running on this machine.
func checkHome(home string, daemons []string) error {
	if hasDB(home) {
		return nil
	}
	if other := otherHomes(home, daemons); len(other) > 0 {
		return fmt.Errorf("%s holds no Overseer database, but the daemon runs with %s: pass --home %s or set OVERSEER_HOME=%s",
			home, strings.Join(other, ", "), other[0], other[0])
	}
	return fmt.Errorf("%s holds no Overseer database yet, and no daemon runs for it: start one (`overseer serve`, or ./scripts/run.sh), "+
		"or pass --home (or set OVERSEER_HOME) to the home your daemon uses", home)
}

func otherHomes(home string, daemons []string) []string {
	var out []string
	for _, d := range daemons {
		if filepath.Clean(d) != filepath.Clean(home) {
			out = append(out, d)
		}
	}
	return out
}

// runningDaemons returns the homes of the `overseer serve` processes of
// this machine that this user may inspect (Linux's /proc; elsewhere none).
func runningDaemons() []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	seen := map[string]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		raw, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if home, ok := serveHome(args, func(key string) string { return procEnv(dir, key) }, func() string {
			cwd, _ := os.Readlink(filepath.Join(dir, "cwd"))
			return cwd
		}); ok && home != "" {
			seen[home] = true
		}
	}
	out := make([]string, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// serveHome reads the home of an `overseer serve` command line: --home,
// else $OVERSEER_HOME, else ~/.overseer. ok is false for any other command.
func serveHome(args []string, env func(string) string, cwd func() string) (string, bool) {
	if len(args) < 2 || !strings.HasPrefix(filepath.Base(args[0]), "overseer") {
		return "", false
	}
	home, serve := "", false
	for i := 1; i < len(args); i++ {
		switch v := args[i]; {
		case v == "--home" && i+1 < len(args):
			home = args[i+1]
			i++
		case strings.HasPrefix(v, "--home="):
			home = strings.TrimPrefix(v, "--home=")
		case v == "--policy" && i+1 < len(args):
			i++
		case v == "serve":
			serve = true
		case !strings.HasPrefix(v, "-") && !serve:
			return "", false // another sub-command
		}
	}
	if !serve {
		return "", false
	}
	if home == "" {
		home = env("OVERSEER_HOME")
	}
	if home == "" {
		if h := env("HOME"); h != "" {
			home = filepath.Join(h, ".overseer")
		}
	}
	if home != "" && !filepath.IsAbs(home) {
		if wd := cwd(); wd != "" {
			home = filepath.Join(wd, home)
		}
	}
	return home, true
}

// procEnv reads one variable of a process's environment ("" when unknown).
func procEnv(dir, key string) string {
	b, err := os.ReadFile(filepath.Join(dir, "environ"))
	if err != nil {
		return ""
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
