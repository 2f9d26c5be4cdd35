package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/frontend/notify"
	"github.com/overseer-dev/overseer/internal/frontend/web"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/limits"
	"github.com/overseer-dev/overseer/internal/store"
)

func init() {
	mounts = append(mounts, mountConsole)
}

// NoQREnv turns off the QR code `overseer serve` prints (set to 1).
const NoQREnv = "OVERSEER_NO_QR"

// mountConsole mounts the web console on the daemon's router, starts the
// notifications configured in $OVERSEER_HOME/notify.yaml, and prints the
// console's address (with a QR code for a phone) once the daemon listens.
//
// The background work (notifications, the address announcement) is owned
// by a context that ends when the daemon is told to stop (SIGINT, SIGTERM,
// the signals `overseer serve` stops on) and also stops when the kernel's
// store closes.
func mountConsole(k *kernel.Kernel, api *httpapi.Server) error {
	tok, err := EnsureToken(k.Home)
	if err != nil {
		return err
	}
	ncfg, err := notify.Load(filepath.Join(k.Home, notify.ConfigName))
	switch {
	case errors.Is(err, notify.ErrNoConfig):
		ncfg = nil
	case err != nil:
		return err // a broken notify.yaml is reported, not ignored
	}
	opts := web.Options{Token: tok, Throttle: api.Throttle(), Alarms: api.Alarms()}
	if ncfg != nil && ncfg.LinkTTL > 0 {
		opts.LinkTTL = time.Duration(ncfg.LinkTTL)
	}
	con, err := web.New(k, opts)
	if err != nil {
		return err
	}
	con.Mount(api.Router())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }() // ends with the daemon's stop signal
	go announce(ctx, k.Home, os.Stdout)
	go con.PruneSpentEvery(ctx, time.Hour, func(f string, a ...any) { fmt.Fprintf(os.Stderr, "overseer: "+f+"\n", a...) })
	if ncfg != nil {
		nopts := notify.Options{
			Linker: &consoleLinker{con: con, home: k.Home, base: ncfg.BaseURL},
			Logf:   func(f string, a ...any) { fmt.Fprintf(os.Stderr, "overseer: "+f+"\n", a...) },
		}
		twoWayOptions(&nopts, con, api.Alarms(), k.Gate.Get)
		if k.Shared() {
			nopts.Claim = announceClaim(k) // each request announced once by the fleet
		}
		n, err := notify.New(ncfg, nopts)
		if err != nil {
			return err
		}
		mountNotifyTest(k, api, n)
		pending := func(ctx context.Context) ([]*store.Approval, error) {
			list, err := k.Gate.Pending(ctx)
			if errors.Is(err, store.ErrClosed) {
				return nil, err
			}
			return list, err
		}
		// One instance among those sharing the database (with the same
		// channels) listens to the two-way channels and announces: every
		// pending request, each once, whichever instance it was opened on,
		// and the alerts. Another takes over when it stops or dies. An
		// instance of its own (SQLite) leads at once.
		var leading atomic.Bool
		linker := &consoleLinker{con: con, home: k.Home, base: ncfg.BaseURL}
		n.SetStandby(k.Shared()) // until this instance leads
		// Alarms (the database's size) reach the same channels, from the
		// instance that leads them (every instance measures the database).
		alarms := &alarmNotifier{alarms: api.Alarms(), leading: &leading, send: func(ctx context.Context, al limits.Alarm) {
			actx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			m := notify.AlertMessage(al.Name, "Overseer alarm: "+strings.ReplaceAll(al.Name, "_", " "), al.Message, al.Since)
			if err := n.Alert(actx, m); err != nil {
				fmt.Fprintln(os.Stderr, "overseer: notifying the alarm:", err)
			}
		}}
		api.Alarms().OnRaise(func(al limits.Alarm) { alarms.raised(ctx, al) })
		go leadChannels(ctx, k, ChannelsLead(ncfg), &leading, os.Stderr, func(lctx context.Context) {
			n.SetStandby(false)
			defer n.SetStandby(k.Shared())
			go alarms.led(lctx)
			var wg sync.WaitGroup
			wg.Add(4)
			go func() { defer wg.Done(); n.Listen(lctx) }() // two-way channels read answers until lctx ends
			events := k.Gate.Subscribe(lctx)
			go func() { defer wg.Done(); _ = n.Run(lctx, events, pending) }()
			// Security alerts (prompt injection in a result, an MCP rug
			// pull or poisoned definition, a blocked secret send) recorded
			// from now on, by any process sharing the database, reach the
			// same channels.
			var tail int64
			if recs, err := k.Store.QueryAudit(lctx, store.AuditQuery{Desc: true, Limit: 1}); err == nil && len(recs) > 0 {
				tail = recs[0].Seq
			}
			go func() {
				defer wg.Done()
				_ = n.FollowAlerts(lctx, notify.AuditReader(k.Store), tail, func(m *notify.Message) string {
					page := "audit"
					if m.Alert == notify.AlertRugPull || m.Alert == notify.AlertPoisonedTool {
						page = "mcp"
					}
					if m.Alert == notify.AlertRateLimit || m.Alert == notify.AlertBudget {
						page = "limits"
					}
					return linker.consoleURL("#/" + page)
				})
			}()
			// Anomalies and auto-rules that notify reach the channels they name.
			go func() { defer wg.Done(); notifyControls(lctx, k, n, 2*time.Second, os.Stderr) }()
			wg.Wait()
		})
		fmt.Fprintf(os.Stdout, "  notify:    %d channels (%s)\n", len(ncfg.Channels), channelNames(ncfg))
	}
	return nil
}

// ChannelsLead names the lead of the notification channels cfg configures
// among the instances sharing a database: instances with the same channels
// (type and name) share one lead.
func ChannelsLead(cfg *notify.Config) string {
	var ids []string
	for _, c := range cfg.Channels {
		ids = append(ids, c.Type+":"+c.Name)
	}
	sort.Strings(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return "notify/" + hex.EncodeToString(sum[:8])
}

// alarmNotifier sends the alarms to the notification channels while this
// instance leads them: each alarm raised while it leads, and those already
// raised when it comes to lead (the daemon measures its database as it
// starts, before it may lead), each once (by name and since: a cleared
// alarm raised again is sent again).
type alarmNotifier struct {
	alarms  *limits.Alarms
	leading *atomic.Bool
	send    func(context.Context, limits.Alarm)

	mu   sync.Mutex
	sent map[string]time.Time
}

// raised is the alarms' subscriber: al was just raised.
func (a *alarmNotifier) raised(ctx context.Context, al limits.Alarm) {
	if a.leading.Load() {
		a.once(ctx, al)
	}
}

// led sends the alarms raised before this instance came to lead; it runs
// after leading is set, so that an alarm raised meanwhile is sent by one
// of the two, once.
func (a *alarmNotifier) led(ctx context.Context) {
	for _, al := range a.alarms.Active() {
		a.once(ctx, al)
	}
}

func (a *alarmNotifier) once(ctx context.Context, al limits.Alarm) {
	a.mu.Lock()
	if since, ok := a.sent[al.Name]; ok && since.Equal(al.Since) {
		a.mu.Unlock()
		return
	}
	if a.sent == nil {
		a.sent = map[string]time.Time{}
	}
	a.sent[al.Name] = al.Since
	a.mu.Unlock()
	a.send(ctx, al)
}

// LeadRetry is how long leadChannels waits after failing to ask for the lead.
var LeadRetry = time.Second

// leadChannels runs work whenever this instance leads name, until ctx
// ends: work's context ends when the lead is lost (another instance then
// leads), and the lead is given up when work returns. leading says whether
// work runs.
func leadChannels(ctx context.Context, k *kernel.Kernel, name string, leading *atomic.Bool, logw io.Writer, work func(context.Context)) {
	for ctx.Err() == nil {
		lctx, cancel := context.WithCancel(ctx)
		lost, err := k.Lead(lctx, name)
		if err != nil {
			cancel()
			if ctx.Err() == nil {
				fmt.Fprintln(logw, "overseer: waiting to lead the notification channels:", err)
				select {
				case <-ctx.Done():
				case <-time.After(LeadRetry):
				}
			}
			continue
		}
		go func() { // ends work when the lead is lost
			select {
			case <-lost:
			case <-lctx.Done():
			}
			cancel()
		}()
		if k.Shared() {
			fmt.Fprintln(logw, "overseer: this instance now listens to the notification channels and announces the requests")
		}
		leading.Store(true)
		work(lctx)
		leading.Store(false)
		cancel()
		<-lost // the lead is given up before it is asked for again
	}
}

// announceClaim claims the announcement of a request in the shared
// database: true for the first instance that asks.
func announceClaim(k *kernel.Kernel) func(context.Context, string) (bool, error) {
	return func(ctx context.Context, id string) (bool, error) {
		mine := false
		err := k.Store.UpdateState(ctx, AnnouncedNS, id, func(old []byte) ([]byte, error) {
			if old != nil {
				return old, nil
			}
			mine = true
			return json.Marshal(map[string]int64{"at": time.Now().Unix()})
		})
		return mine && err == nil, err
	}
}

// AnnouncedNS is the state namespace of the requests announced.
const AnnouncedNS = "notify_announced"

// AnnouncedKeep is how long an announcement's claim is kept (a request
// still pending after it is announced again if the lead moves).
const AnnouncedKeep = 48 * time.Hour

// pruneAnnounced forgets the announcements claimed before cutoff.
func pruneAnnounced(ctx context.Context, k *kernel.Kernel, cutoff time.Time) (int, error) {
	all, err := k.Store.ListState(ctx, AnnouncedNS)
	if err != nil {
		return 0, err
	}
	old := func(v []byte) bool {
		var c struct{ At int64 }
		return json.Unmarshal(v, &c) == nil && c.At < cutoff.Unix()
	}
	n := 0
	for id, v := range all {
		if !old(v) {
			continue
		}
		if err := k.Store.UpdateState(ctx, AnnouncedNS, id, func(cur []byte) ([]byte, error) {
			if cur == nil || !old(cur) {
				return cur, nil
			}
			return nil, nil
		}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func channelNames(cfg *notify.Config) string {
	var names []string
	for _, c := range cfg.Channels {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// consoleLinker makes notification links with the console's signer.
type consoleLinker struct {
	con  *web.Console
	home string
	base string
}

// Links implements notify.Linker.
func (l *consoleLinker) Links(ctx context.Context, apr *store.Approval, via string) (notify.Links, error) {
	base := l.base
	if base == "" {
		addr, err := daemonAddr(l.home)
		if err != nil {
			return notify.Links{}, err
		}
		base = schemeOf(l.home) + "://" + reachableAddr(addr)
	}
	wl, err := l.con.Links(apr, base, via)
	if err != nil {
		return notify.Links{}, err
	}
	return notify.Links{Approve: wl.Approve, Deny: wl.Deny, Open: wl.Open, Expires: wl.Expires}, nil
}

// consoleURL is the console's address with fragment ("#/mcp"), or "" when
// the daemon's address is not known yet.
func (l *consoleLinker) consoleURL(fragment string) string {
	base := l.base
	if base == "" {
		addr, err := daemonAddr(l.home)
		if err != nil {
			return ""
		}
		base = schemeOf(l.home) + "://" + reachableAddr(addr)
	}
	return strings.TrimSuffix(base, "/") + web.Prefix + fragment
}

// daemonAddr reads the running daemon's address from its address file.
func daemonAddr(home string) (string, error) {
	b, err := os.ReadFile(filepath.Join(home, kernel.AddrFile))
	if err != nil {
		return "", fmt.Errorf("the daemon's address is not known yet: %w", err)
	}
	var info client.AddrInfo
	if err := json.Unmarshal(b, &info); err != nil || info.Addr == "" {
		return "", fmt.Errorf("the daemon's address file is unreadable")
	}
	return info.Addr, nil
}

// reachableAddr turns a listen address on every interface (0.0.0.0, ::)
// into one a phone on the same network can reach: this machine's first
// non-loopback IPv4 address.
func reachableAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsUnspecified() {
		return addr
	}
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return addr
	}
	for _, a := range ifaddrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return net.JoinHostPort(n.IP.String(), port)
		}
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// announce waits until this process's daemon has written its address file,
// then prints the console's address and, unless NoQREnv is set, a QR code
// of it for a phone.
func announce(ctx context.Context, home string, out io.Writer) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(home, kernel.AddrFile))
		var info client.AddrInfo
		if err == nil && json.Unmarshal(b, &info) == nil && info.PID == os.Getpid() && info.Addr != "" {
			fmt.Fprint(out, consoleBanner(schemeOf(home)+"://"+reachableAddr(info.Addr), os.Getenv(NoQREnv) == "", isTerminal(out)))
			return
		}
		if time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// consoleBanner is what announce prints.
func consoleBanner(base string, withQR, ansi bool) string {
	url := base + web.Prefix
	var b strings.Builder
	fmt.Fprintf(&b, "  console:   %s\n", url)
	host := base
	if u, err := neturl.Parse(base); err == nil {
		host = u.Hostname()
	}
	if !withQR {
		return b.String()
	}
	if isLoopback(host) {
		// No phone can reach a loopback address: a QR code of it would
		// only mislead.
		b.WriteString("  (listening on loopback only, so no QR code: a phone cannot reach it; listen on the network with TLS to use one)\n")
		return b.String()
	}
	qr, err := web.TerminalQR(url, ansi)
	if err != nil {
		return b.String()
	}
	b.WriteString("  scan to open the console on a phone on the same network:\n")
	b.WriteString(qr)
	return b.String()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// schemeOf is "https" when the daemon of home serves TLS, else "http".
func schemeOf(home string) string {
	b, err := os.ReadFile(filepath.Join(home, kernel.AddrFile))
	var info client.AddrInfo
	if err == nil && json.Unmarshal(b, &info) == nil && info.TLS {
		return "https"
	}
	return "http"
}
