package httpapi

import (
	"net/http"
	"slices"
	"sync"
)

// Access names the credential a route needs. Every route of the daemon is
// registered with one (see Router), so the daemon can list its routes with
// what each needs (GET /api/v1/routes), and a test can try every one of
// them without and with wrong credentials.
type Access string

// The accesses.
const (
	// AccessPublic needs nothing: /healthz, the console's sign-in page and
	// its static assets, redirects.
	AccessPublic Access = "public"
	// AccessAgent needs nothing and is under the submission quotas: what
	// agents submit (actions, results, the MCP gateway).
	AccessAgent Access = "agent"
	// AccessToken needs the daemon's token (Authorization: Bearer).
	AccessToken Access = "token"
	// AccessStatus needs the daemon's token or the status token that the
	// action's submission returned: an action's outcome.
	AccessStatus Access = "status"
	// AccessScrape needs the scrape token or the daemon's token: metrics.
	AccessScrape Access = "scrape"
	// AccessSession needs a console session (opened with the daemon's
	// token); changes also need the session's CSRF token.
	AccessSession Access = "session"
	// AccessLogin takes the daemon's token in a form and opens a session.
	AccessLogin Access = "login"
	// AccessLink needs a signed, single-use approval link (in the path).
	AccessLink Access = "link"
)

// Route is one registered pattern and the access it needs.
type Route struct {
	Pattern string `json:"pattern"`
	Access  Access `json:"access"`
}

// Router is the daemon's request router: an http.ServeMux that records
// every pattern with its access. Front ends mount their handlers on it.
type Router struct {
	mux    *http.ServeMux
	mu     sync.Mutex
	routes []Route
}

// NewRouter returns an empty router.
func NewRouter() *Router { return &Router{mux: http.NewServeMux()} }

// Handle registers h for pattern (as http.ServeMux does) needing access.
func (r *Router) Handle(pattern string, access Access, h http.Handler) {
	r.mu.Lock()
	r.routes = append(r.routes, Route{Pattern: pattern, Access: access})
	r.mu.Unlock()
	r.mux.Handle(pattern, h)
}

// HandleFunc registers fn for pattern needing access.
func (r *Router) HandleFunc(pattern string, access Access, fn http.HandlerFunc) {
	r.Handle(pattern, access, fn)
}

// ServeHTTP dispatches to the registered handlers.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) { r.mux.ServeHTTP(w, req) }

// Routes returns the registered routes, sorted by pattern.
func (r *Router) Routes() []Route {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.routes)
	slices.SortFunc(out, func(a, b Route) int {
		switch {
		case a.Pattern < b.Pattern:
			return -1
		case a.Pattern > b.Pattern:
			return 1
		}
		return 0
	})
	return out
}
