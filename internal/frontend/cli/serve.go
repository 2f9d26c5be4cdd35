package cli

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/limits"
)

// mounts lets other front ends (web console, MCP over HTTP) add handlers
// to the daemon's router.
var mounts []func(k *kernel.Kernel, api *httpapi.Server) error

func (a *app) serveCmd() *cobra.Command {
	var addr, certFile, keyFile string
	var anywhere bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the Overseer daemon (HTTP API, approvals, metrics)",
		Long: `Run the daemon. It listens on loopback (127.0.0.1:7777) by default, keeps the
approvals queue, and writes its address to $OVERSEER_HOME/daemon.json so other
commands and hooks find it. A request whose asker is gone (a hook that was
killed or stopped waiting, an MCP client that exited) is withdrawn, at start
and while it runs, so the queue holds only requests somebody waits for. The API token for people (approve, deny, policy)
is in $OVERSEER_HOME/token (mode 0600).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.serve(ctx, addr, anywhere, certFile, keyFile)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7777", "address to listen on (host:port; port 0 picks a free port)")
	cmd.Flags().StringVar(&certFile, "tls-cert", "", "serve HTTPS with this certificate (PEM); required with --tls-key to listen beyond loopback")
	cmd.Flags().StringVar(&keyFile, "tls-key", "", "the certificate's private key (PEM)")
	cmd.Flags().BoolVar(&anywhere, "listen-anywhere-without-tls", false,
		"allow a non-loopback address without TLS (anyone who can reach it and steals the token can approve)")
	return cmd
}

// DatabaseCheckEvery is how often the daemon measures its database for the
// size alarm.
const DatabaseCheckEvery = 10 * time.Second

// EnsureToken returns the daemon token in home, creating it (mode 0600) if
// it does not exist.
func EnsureToken(home string) (string, error) {
	return ensureSecret(home, kernel.TokenFile)
}

// ensureSecret returns the secret in home/name, creating a random one (mode
// 0600) if it does not exist.
func ensureSecret(home, name string) (string, error) {
	p := filepath.Join(home, name)
	if b, err := os.ReadFile(p); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(raw[:])
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", p, err)
	}
	return tok, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveGCPercent is the daemon's garbage collector target, unless GOGC
// says otherwise. The daemon keeps little live memory (about 7 MB under
// the API load of bench/run.sh), and every recorded call allocates its
// encodings: collecting at five times the live heap instead of twice took
// about a tenth off the daemon's CPU per recorded call, for a few tens of
// MB more.
const serveGCPercent = 400

func (a *app) serve(ctx context.Context, addr string, anywhere bool, certFile, keyFile string) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if (certFile == "") != (keyFile == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	useTLS := certFile != ""
	if useTLS {
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return fmt.Errorf("loading the TLS certificate: %w", err)
		}
		if certFile, err = filepath.Abs(certFile); err != nil {
			return err
		}
	}
	if !isLoopback(host) && !anywhere && !useTLS {
		return fmt.Errorf("refusing to listen on %s: it is not a loopback address and there is no TLS; "+
			"pass --tls-cert and --tls-key, or --listen-anywhere-without-tls to accept the risk", addr)
	}
	k, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer k.Close()
	if c, err := client.Discover(ctx, k.Home); err == nil {
		return fmt.Errorf("a daemon already runs for %s at %s", k.Home, c.Base)
	}
	if k.Sealing.New {
		a.showNewKey(k.Home, k.Sealing) // the first start: shown this once
		fmt.Fprintln(a.stdout)
	}
	tok, err := EnsureToken(k.Home)
	if err != nil {
		return err
	}
	scrapeTok, err := ensureSecret(k.Home, httpapi.ScrapeTokenFile)
	if err != nil {
		return err
	}
	api, err := httpapi.New(k, httpapi.Options{Token: tok, ScrapeToken: scrapeTok, LoopbackHost: isLoopback(host)})
	if err != nil {
		return err
	}
	api.Alarms().OnRaise(func(al limits.Alarm) { fmt.Fprintln(a.stderr, "overseer: ALARM:", al.Message) })
	for _, m := range mounts {
		if err := m(k, api); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	addrFile := filepath.Join(k.Home, kernel.AddrFile)
	ai := client.AddrInfo{Addr: ln.Addr().String(), PID: os.Getpid(), Started: time.Now().UTC()}
	if useTLS {
		ai.TLS, ai.CertFile = true, certFile
	}
	info, _ := json.Marshal(ai)
	if err := os.WriteFile(addrFile, info, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("writing %s: %w", addrFile, err)
	}
	defer os.Remove(addrFile)

	// Approvals whose deadline passed while no daemon ran get their default now.
	if n, err := k.Gate.ExpireDue(ctx); err != nil {
		fmt.Fprintln(a.stderr, "overseer: expiring approvals:", err)
	} else if n > 0 {
		fmt.Fprintf(a.stderr, "overseer: %d approvals timed out while the daemon was down; their default was applied\n", n)
	}
	// Requests whose asker cannot still be waiting (its process is gone, its
	// wait ran out) are withdrawn, so the queue shows only live ones.
	if n, err := k.Gate.WithdrawGone(ctx); err != nil {
		fmt.Fprintln(a.stderr, "overseer: withdrawing abandoned requests:", err)
	} else if n > 0 {
		fmt.Fprintf(a.stderr, "overseer: %d requests were withdrawn: nobody waits for their answer any more\n", n)
	}
	pending, _ := k.Gate.Pending(ctx)
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	fmt.Fprintf(a.stdout, "Overseer daemon listening on %s://%s\n", scheme, ln.Addr())
	fmt.Fprintf(a.stdout, "  home:      %s\n", k.Home)
	policyName := k.PolicyFile
	if policyName == "" {
		policyName = "built-in default"
	}
	fmt.Fprintf(a.stdout, "  policy:    %s\n", policyName)
	fmt.Fprintf(a.stdout, "  database:  %s\n", kernel.DescribeStore(k.Home, k.Engine.Policy()))
	fmt.Fprintf(a.stdout, "  token:     %s (for approve/deny/policy)\n", filepath.Join(k.Home, kernel.TokenFile))
	fmt.Fprintf(a.stdout, "  metrics:   %s (read-only scrape token for /metrics)\n", filepath.Join(k.Home, httpapi.ScrapeTokenFile))
	fmt.Fprintf(a.stdout, "  pending:   %d approvals\n", len(pending))
	if _, err := audit.PendingKey(k.Home); err == nil {
		fmt.Fprintf(a.stdout, "  audit key: not exported yet (overseer audit key --out FILE): until then the seal proves nothing\n")
	}
	if fs, err := k.Findings(ctx, false); err == nil && len(fs) > 0 {
		fmt.Fprintf(a.stderr, "overseer: %d rules or approvals have no audited record behind them and are refused; run overseer audit verify\n", len(fs))
	}

	errc := make(chan error, 1)
	go func() {
		if useTLS {
			errc <- srv.ServeTLS(ln, certFile, keyFile)
			return
		}
		errc <- srv.Serve(ln)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	a.pruneUndo(ctx, k)
	// The database's size is watched: over settings.limits.database_alarm_bytes
	// an alarm is raised (logged, notified, shown by /healthz and the console).
	// With PostgreSQL, every instance measures the tables of Overseer's
	// schema (each shows the alarm on its /healthz).
	dbAlarm := k.Engine.Policy().Settings.Limits.DatabaseAlarmBytes
	checkDB := func() {
		mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		size, err := k.DatabaseSize(mctx)
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintln(a.stderr, "overseer: measuring the database:", err)
			}
			return
		}
		api.Alarms().CheckSize(size, dbAlarm, time.Now())
	}
	checkDB()
	growth := time.NewTicker(DatabaseCheckEvery)
	defer growth.Stop()
	for {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			fmt.Fprintln(a.stdout, "Overseer daemon stopped")
			return nil
		case err := <-errc:
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return err
		case <-prune.C:
			a.pruneUndo(ctx, k)
		case <-growth.C:
			checkDB()
		case <-tick.C:
			if _, err := k.Gate.ExpireDue(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintln(a.stderr, "overseer: expiring approvals:", err)
			}
			if _, err := k.Gate.WithdrawGone(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintln(a.stderr, "overseer: withdrawing abandoned requests:", err)
			}
			if err := k.Engine.Reload(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintln(a.stderr, "overseer: reloading the user policy (actions go to a person until fixed):", err)
			}
			if err := k.SyncControls(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintln(a.stderr, "overseer: reading the auto-rules and anomaly rules:", err)
			}
		}
	}
}

// Undo keeps previous file contents for this long, and at most this much.
const (
	undoMaxAge   = 30 * 24 * time.Hour
	undoMaxBytes = 1 << 30
)

// pruneUndo bounds the undo store by age and size, and forgets the egress
// memory of idle sessions.
func (a *app) pruneUndo(ctx context.Context, k *kernel.Kernel) {
	u, err := k.Undo()
	if err == nil {
		_, err = u.Prune(ctx, undoMaxAge, undoMaxBytes)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(a.stderr, "overseer: pruning the undo store:", err)
	}
	if _, err := k.PruneEgressMemory(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintln(a.stderr, "overseer: pruning the egress guard's session memory:", err)
	}
	if _, err := k.PruneConflicts(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintln(a.stderr, "overseer: pruning the conflict guard's touches:", err)
	}
	if k.Shared() {
		if _, err := k.PruneQuotaBuckets(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(a.stderr, "overseer: pruning the shared quota buckets:", err)
		}
		if _, err := pruneAnnounced(ctx, k, time.Now().Add(-AnnouncedKeep)); err != nil && ctx.Err() == nil {
			fmt.Fprintln(a.stderr, "overseer: pruning the announcements:", err)
		}
	}
}
