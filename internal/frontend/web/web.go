// Package web is Overseer's web console: the approvals queue with live
// updates, the audit timeline, the policy view with "try an action" and the
// risk dashboard, served by the daemon under /ui/ from assets embedded in the
// binary (plain HTML, CSS and JavaScript, no build step; stored
// gzip-compressed and sent so to browsers, see assets.go). Its Tasks page
// follows the tasks of Overseer's own agent loop and can abort them.
//
// People sign in with the daemon's token and get a session cookie (HttpOnly,
// SameSite=Strict, stored server side so that it can be revoked); every
// state-changing request carries a CSRF token bound to the session and must
// come from the console's own origin. Every response carries strict security
// headers (a content security policy without inline script, no framing, no
// referrer, no sniffing).
//
// An approval can also be answered without a session through a signed link
// (see Console.Links): the link is bound to one approval and its exact
// arguments, expires, and works once. Links are what notifications carry.
//
// The console never decides anything: every answer goes to the kernel's
// HumanGate, and any failure on the way (a bad session, a missing CSRF
// token, a used or expired link) ends in no answer at all, so the approval
// stays pending and the gate's default (deny unless configured) applies at
// its deadline.
package web

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os/user"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/agent"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/limits"
)

// Prefix is the path under which the console is served.
const Prefix = "/ui/"

// Defaults of Options.
const (
	DefaultSessionTTL = 12 * time.Hour
	DefaultLinkTTL    = 30 * time.Minute
	DefaultPoll       = time.Second
	DefaultHeartbeat  = 15 * time.Second
)

// Sentinel errors.
var (
	// ErrNoToken means Options.Token is empty.
	ErrNoToken = errors.New("web: the daemon token is required")
	// ErrKeyPermissions means the signing key file can be read by others.
	ErrKeyPermissions = kernel.ErrKeyPermissions
)

// Options configure a Console.
type Options struct {
	// Token is the daemon's token: the credential people sign in with.
	Token string
	// KeyFile holds the console's signing key (created, mode 0600, when
	// missing). Default: KeyName in the kernel's home.
	KeyFile string
	// Who names the person answering when the login form leaves the name
	// empty. Default: the user running the daemon.
	Who string
	// SessionTTL is how long a session lasts. Default DefaultSessionTTL.
	SessionTTL time.Duration
	// LinkTTL is how long an approval link works at most (it never outlives
	// the approval's deadline). Default DefaultLinkTTL.
	LinkTTL time.Duration
	// Poll is how often the live stream re-reads the queue and the audit
	// log, for changes made by other processes. Default DefaultPoll.
	Poll time.Duration
	// Heartbeat is how often the live stream sends a keep-alive comment.
	Heartbeat time.Duration
	// Clock defaults to the kernel's clock.
	Clock clock.Clock
	// Throttle slows wrong tokens at sign-in, per client; the daemon
	// shares the API's. Default: a throttle of the console's own.
	Throttle *limits.Throttle
	// Alarms are shown as a banner (the daemon passes the API's).
	Alarms *limits.Alarms
}

// KeyName is the default name of the signing key file in Overseer's home.
const KeyName = kernel.ConsoleKeyName

// Console is the web console. Build it with New and mount it with Mount.
type Console struct {
	k       *kernel.Kernel
	opts    Options
	clk     clock.Clock
	key     []byte
	tokenFP string // fingerprint of the daemon token sessions are bound to
	pages   *pages
	static  http.Handler
	cop     *http.CrossOriginProtection
	limiter *limits.Throttle
	tasks   *httpapi.Tasks
}

// New builds the console over k.
func New(k *kernel.Kernel, opts Options) (*Console, error) {
	if strings.TrimSpace(opts.Token) == "" {
		return nil, ErrNoToken
	}
	if opts.KeyFile == "" {
		opts.KeyFile = k.Home + "/" + KeyName
	}
	if opts.Who == "" {
		opts.Who = defaultWho()
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.LinkTTL <= 0 {
		opts.LinkTTL = DefaultLinkTTL
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.Clock == nil {
		opts.Clock = k.Clock
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Throttle == nil {
		opts.Throttle = limits.NewThrottle(opts.Clock)
	}
	key, err := LoadKey(opts.KeyFile)
	if err != nil {
		return nil, err
	}
	pgs, err := loadPages(asset)
	if err != nil {
		return nil, fmt.Errorf("web: pages: %w", err)
	}
	static, err := loadStatic()
	if err != nil {
		return nil, fmt.Errorf("web: assets: %w", err)
	}
	fp := sha256.Sum256([]byte("overseer-token\n" + strings.TrimSpace(opts.Token)))
	c := &Console{
		k:       k,
		opts:    opts,
		clk:     opts.Clock,
		key:     key,
		tokenFP: fmt.Sprintf("%x", fp[:8]),
		pages:   pgs,
		static:  static,
		cop:     http.NewCrossOriginProtection(),
		limiter: opts.Throttle,
		tasks:   httpapi.NewTasks(agent.NewTaskStore(k, opts.Clock.Now), k.Gate).WithKernel(k),
	}
	c.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, http.StatusForbidden, "cross_origin", "cross-origin requests are refused")
	}))
	return c, nil
}

func defaultWho() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "web"
}

// Mount registers the console's routes on r: everything under /ui/, and
// a redirect from / to the console.
func (c *Console) Mount(r *httpapi.Router) {
	h := func(pattern string, access httpapi.Access, fn http.HandlerFunc) {
		r.Handle(pattern, access, c.secure(fn))
	}
	const (
		public  = httpapi.AccessPublic
		session = httpapi.AccessSession
	)

	h("GET /{$}", public, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, Prefix, http.StatusFound) })
	h("GET /ui", public, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, Prefix, http.StatusFound) })
	r.Handle("GET /ui/static/", public, c.staticHeaders(c.static))

	h("GET /ui/login", public, c.loginPage)
	h("POST /ui/login", httpapi.AccessLogin, c.login)
	h("POST /ui/logout", session, c.session(c.logout))
	// The page itself sends to the sign-in page without a session.
	h("GET /ui/{$}", session, c.page)

	// Live updates.
	h("GET /ui/events", session, c.session(c.events))

	// The console's JSON API (session + CSRF for every change).
	h("GET /ui/api/session", session, c.session(c.apiSession))
	h("GET /ui/api/health", session, c.session(c.apiHealth))
	h("GET /ui/api/approvals", session, c.session(c.apiApprovals))
	h("GET /ui/api/approvals/{id}", session, c.session(c.apiApproval))
	h("POST /ui/api/approvals/{id}/{decision}", session, c.session(c.csrf(c.apiAnswer)))
	h("GET /ui/api/audit", session, c.session(c.apiAudit))
	h("GET /ui/api/audit/verify", session, c.session(c.apiVerify))
	h("GET /ui/api/audit/export", session, c.session(c.apiExport))
	h("GET /ui/api/undo/{action}", session, c.session(c.apiUndoDiff))
	h("POST /ui/api/undo/{action}", session, c.session(c.csrf(c.apiUndo)))
	h("GET /ui/api/policy", session, c.session(c.apiPolicy))
	h("POST /ui/api/policy/explain", session, c.session(c.csrf(c.apiExplain)))
	h("DELETE /ui/api/policy/rules/{id}", session, c.session(c.csrf(c.apiDeleteRule)))
	h("GET /ui/api/proposals", session, c.session(c.apiProposals))
	h("POST /ui/api/proposals/{id}/accept", session, c.session(c.csrf(c.apiProposalAccept)))
	h("POST /ui/api/proposals/{id}/dismiss", session, c.session(c.csrf(c.apiProposalDismiss)))
	h("POST /ui/api/policy/replay", session, c.session(c.csrf(c.apiReplay)))
	h("GET /ui/api/dashboard", session, c.session(c.apiDashboard))
	h("GET /ui/charts/{name}", session, c.session(c.chart))
	h("GET /ui/api/tasks", session, c.session(c.apiTasks))
	h("GET /ui/api/tasks/{id}", session, c.session(c.apiTask))
	h("POST /ui/api/tasks/{id}/abort", session, c.session(c.csrf(c.apiTaskAbort)))
	h("GET /ui/api/mcp/pins", session, c.session(c.apiPins))
	h("GET /ui/api/watch/panes", session, c.session(c.apiPanes))
	h("POST /ui/api/mcp/pins/{server}/{tool}/accept", session, c.session(c.csrf(c.apiAcceptPin)))
	h("GET /ui/api/grants", session, c.session(c.apiGrants))
	h("POST /ui/api/grants", session, c.session(c.csrf(c.apiIssueGrant)))
	h("POST /ui/api/grants/{id}/revoke", session, c.session(c.csrf(c.apiRevokeGrant)))
	h("GET /ui/api/conflicts", session, c.session(c.apiConflicts))
	h("GET /ui/api/mcp/upstreams", session, c.session(c.apiUpstreams))
	c.limitRoutes(h) // limits.go
	c.agentRoutes(h)
	c.mountControls(h)

	// Approval links: no session; the signed single-use token is the credential.
	h("GET /ui/a/{token}", httpapi.AccessLink, c.linkPage)
	h("POST /ui/a/{token}", httpapi.AccessLink, c.linkAnswer)
}

// Handler returns a router with only the console mounted (for tests and
// for serving the console apart from the API).
func (c *Console) Handler() http.Handler {
	r := httpapi.NewRouter()
	c.Mount(r)
	return r
}

// apiHealth tells the page the alarms raised (the database's size, for
// one), which it shows as a banner.
func (c *Console) apiHealth(w http.ResponseWriter, r *http.Request, _ *session) {
	al := c.opts.Alarms.Active()
	if al == nil {
		al = []limits.Alarm{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"alarms": al})
}

// cspPolicy forbids inline script and style, framing, plugins and foreign
// origins.
const cspPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; " +
	"manifest-src 'self'"

// setSecurityHeaders sets the headers every console response carries.
func setSecurityHeaders(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", cspPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()")
	if r.TLS != nil {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
}

// secure wraps a dynamic handler: security headers, no caching, and the
// cross-origin check on unsafe methods.
func (c *Console) secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w, r)
		w.Header().Set("Cache-Control", "no-store")
		if err := c.cop.Check(r); err != nil {
			writeErr(w, http.StatusForbidden, "cross_origin", "cross-origin requests are refused")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// staticHeaders wraps the embedded assets: security headers and a short
// cache (the assets change only with the binary).
func (c *Console) staticHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w, r)
		w.Header().Set("Cache-Control", "private, max-age=300")
		h.ServeHTTP(w, r)
	})
}

// remoteIsLoopback reports whether the request came from this machine.
func remoteIsLoopback(r *http.Request) bool {
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = strings.Trim(host, "[]")
	return host == "127.0.0.1" || host == "::1" || strings.HasPrefix(host, "127.") || host == "localhost"
}

// page serves the console's single page, or sends to the login page.
func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	sess, err := c.lookupSession(r)
	if err != nil {
		http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Rules and approvals with no audited record behind them are refused;
	// the person is told here (see docs/threat-model.md).
	findings, ferr := c.k.Findings(r.Context(), false)
	var unaudited []string
	for _, f := range findings {
		unaudited = append(unaudited, f.String())
	}
	if ferr != nil {
		unaudited = append(unaudited, "the rules and approvals could not be checked against the audit log: "+ferr.Error())
	}
	_, kerr := audit.PendingKey(c.k.Home)
	_ = c.pages.app.render(w, appVals(c.csrfToken(sess.id), sess.Who, r.TLS == nil && !remoteIsLoopback(r), unaudited, kerr == nil))
}
