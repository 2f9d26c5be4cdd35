// Package mcpgw is Overseer's MCP gateway. An agent connects to Overseer as
// its one MCP server (over stdio, or streamable HTTP on the daemon at /mcp);
// Overseer connects to the real servers, configured in
// $OVERSEER_HOME/mcp.yaml, and offers their tools under namespaced names
// ("fs__write_file"). Prompts and resources pass through; upstream
// notifications (list changes, progress, logging, resource updates) are
// forwarded.
//
// Every tools/call passes the firewall: its arguments are checked against
// the tool's input schema (unknown arguments are stripped with a warning,
// invalid ones refused), it becomes an Action — of kind mcp, or the kind
// the configuration maps the tool to, with the argument that holds the
// command, path, URL or SQL — carrying the tool's annotations for the mcp
// guard, and is submitted to the kernel (judged, audited). A call that
// waits for a person is held: through the client's own prompt (MCP
// elicitation) where the client supports it, otherwise for a while and
// then answered "pending approval <id>", and the identical call, retried,
// picks up the answer. Denials come back as tool errors that say what the
// person said.
//
// Upstream servers are supervised: a crashed stdio server is restarted with
// backoff, an unreachable one is reported unhealthy (and audited), and the
// tools of an unavailable server answer with an error at once. The gateway
// itself never goes down with one upstream.
package mcpgw

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/mcpguard"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/mcppin"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// Separator joins a server's name and its tool's or prompt's name.
const Separator = "__"

// Options build a Gateway.
type Options struct {
	// Kernel judges, records and asks. Required.
	Kernel *kernel.Kernel
	// Config is the gateway's configuration. Required (it may list no
	// servers).
	Config *Config
	// Cwd is the working directory recorded on calls to servers whose
	// configuration sets none (the stdio gateway passes its own).
	Cwd string
	// Log receives diagnostics (upstream health, upstream stderr). Default:
	// discarded.
	Log io.Writer
	// Version is reported in the MCP handshake.
	Version string
	// Clock defaults to the kernel's.
	Clock clock.Clock
	// PolicyPoll is how often the user policy layer is re-read, so that
	// tools hidden or revealed by policy changes are re-listed. Default 1s;
	// negative: never.
	PolicyPoll time.Duration
	// Session is the session of calls from clients whose transport has none
	// (stdio). Default: a random id of this gateway. A gateway that a client
	// restarts should get the same one (the stdio gateway derives it from
	// its client process): the requests the previous gateway left open are
	// then picked up by the client's identical retries.
	Session string
	// Client is the process of the client of a stdio gateway: the asker of
	// the requests its calls open, so that they are withdrawn once the
	// client is gone. Nil: unknown.
	Client *store.Asker
}

// Gateway is the MCP gateway. It is safe for concurrent use.
type Gateway struct {
	k        *kernel.Kernel
	cfg      *Config
	clk      clock.Clock
	cwd      string
	version  string
	server   *mcp.Server
	ups      []*upstream  // by name
	instance string       // the session of calls from sessionless clients
	client   *store.Asker // the stdio client's process, if known
	stateKey [32]byte     // seals elicitation request state

	logMu sync.Mutex
	log   io.Writer

	pubMu     sync.Mutex // serialises publish
	mu        sync.Mutex
	tools     map[string]*toolEntry
	prompts   map[string]*promptEntry
	resources map[string]*resourceEntry // by URI
	templates map[string]*templateEntry // by URI template
	mark      policyMark

	recent  *recentCalls
	results *resultQueue
	calls   sync.WaitGroup // calls in flight

	pinCfg   mcppin.Config
	withheld map[string]string // offered name → why it is withheld (guarded by mu)
	pinVer   string            // the pins' version last published (watchPolicy only)

	progMu   sync.Mutex
	progress map[string]progressTarget
	progSeq  atomic.Uint64

	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed sync.Once
}

// toolEntry is one upstream tool as offered to clients.
type toolEntry struct {
	name    string // as offered: server__tool
	up      *upstream
	orig    string // the upstream's own name
	exposed *mcp.Tool
	schema  *argSchema
	kind    action.Kind
	arg     string // the mapped argument, "" when none
	ann     mcpguard.Annotations
	sig     string // the upstream definition, to skip unchanged re-registration
}

type promptEntry struct {
	up   *upstream
	orig string
	sig  string
}

type resourceEntry struct {
	up  *upstream
	sig string
}

type templateEntry struct {
	up  *upstream
	sig string
}

// policyMark identifies the policy snapshot the visible tools were
// computed for.
type policyMark struct {
	admin   *policy.Policy
	user0   *policy.Compiled
	userLen int
}

// New builds the gateway and starts connecting to its upstream servers.
// It never fails because an upstream is down: that upstream is reported
// unhealthy and retried. Close stops it.
func New(opts Options) (*Gateway, error) {
	if opts.Kernel == nil || opts.Config == nil {
		return nil, fmt.Errorf("%w: a kernel and a configuration are required", ErrInvalidConfig)
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	clk := opts.Clock
	if clk == nil {
		clk = opts.Kernel.Clock
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	g := &Gateway{
		k: opts.Kernel, cfg: opts.Config, clk: clk, cwd: opts.Cwd, version: opts.Version, log: opts.Log,
		tools: map[string]*toolEntry{}, prompts: map[string]*promptEntry{},
		resources: map[string]*resourceEntry{}, templates: map[string]*templateEntry{},
		progress: map[string]progressTarget{},
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	g.instance = "mcp-" + hex.EncodeToString(id[:])
	if opts.Session != "" {
		g.instance = opts.Session
	}
	if opts.Client != nil {
		c := *opts.Client
		g.client = &c
	}
	if _, err := rand.Read(g.stateKey[:]); err != nil {
		return nil, err
	}
	g.results = newResultQueue(g)
	var mc mcpguard.Config
	if p := g.k.Engine.Policy(); p != nil {
		if _, err := p.DecodeGuard(mcpguard.Name, &mc); err != nil {
			return nil, err
		}
	}
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	g.pinCfg = mc.Pinning()
	g.withheld = map[string]string{}
	gc := g.k.Gate.Config()
	g.recent = newRecentCalls(clk, gc.Timeout+gc.RetryWindow)
	if opts.Session != "" {
		g.restore()
	}
	g.server = mcp.NewServer(&mcp.Implementation{Name: "overseer", Title: "Overseer MCP gateway", Version: opts.Version},
		&mcp.ServerOptions{
			Instructions: "Tools of several MCP servers, offered through Overseer, a firewall that puts risky calls to a person. " +
				"A tool named server__tool is the tool of that server. A call may come back as waiting for a person's approval: " +
				"then retry the identical call later, with the same arguments, to pick up the answer. A denied call says why.",
			Capabilities: &mcp.ServerCapabilities{
				Tools:     &mcp.ToolCapabilities{ListChanged: true},
				Prompts:   &mcp.PromptCapabilities{ListChanged: true},
				Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
				Logging:   &mcp.LoggingCapabilities{},
			},
			SubscribeHandler:   g.subscribe,
			UnsubscribeHandler: g.unsubscribe,
			CompletionHandler:  g.complete,
		})
	// A withheld tool is not listed; a client that calls it anyway (it
	// listed the tool before it changed) is told why, not "unknown tool".
	g.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				if cr, ok := req.(*mcp.CallToolRequest); ok && cr.Params != nil {
					if why, ok := g.withheldWhy(cr.Params.Name); ok {
						return toolError(meta("", action.Block, "withheld", ""), "Overseer: the tool %s is withheld: %s "+
							"(on Overseer's console, or `overseer mcp accept %s`). Nothing was run; do not retry until the user says it was accepted.",
							cr.Params.Name, why, strings.Replace(cr.Params.Name, Separator, " ", 1)), nil
					}
				}
			}
			if method == "resources/read" {
				if rr, ok := req.(*mcp.ReadResourceRequest); ok && rr.Params != nil {
					if why, ok := g.withheldWhy(withheldKey(mcppin.KindResource, rr.Params.URI)); ok {
						return nil, fmt.Errorf("Overseer: the resource %s is withheld: %s (on Overseer's console, or `overseer mcp accept --kind resource SERVER %s`)",
							rr.Params.URI, why, rr.Params.URI)
					}
				}
			}
			if method == "prompts/get" {
				if gr, ok := req.(*mcp.GetPromptRequest); ok && gr.Params != nil {
					if why, ok := g.withheldWhy(withheldKey(mcppin.KindPrompt, gr.Params.Name)); ok {
						return nil, fmt.Errorf("Overseer: the prompt %s is withheld: %s (on Overseer's console, or `overseer mcp accept --kind prompt %s`)",
							gr.Params.Name, why, strings.Replace(gr.Params.Name, Separator, " ", 1))
					}
				}
			}
			return next(ctx, method, req)
		}
	})
	names := make([]string, 0, len(g.cfg.Servers))
	for n := range g.cfg.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g.ups = append(g.ups, newUpstream(g, n, g.cfg.Servers[n]))
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	for _, u := range g.ups {
		g.wg.Add(1)
		go func() { defer g.wg.Done(); u.run(ctx) }()
	}
	poll := opts.PolicyPoll
	if poll == 0 {
		poll = time.Second
	}
	if poll > 0 {
		g.wg.Add(1)
		go func() { defer g.wg.Done(); g.watchPolicy(ctx, poll) }()
	}
	return g, nil
}

// Close stops the gateway: it disconnects every upstream (stopping stdio
// servers), records the results still queued and waits for its
// goroutines. Client sessions are the caller's to close; calls still in
// flight should end first.
func (g *Gateway) Close() error {
	g.closed.Do(func() {
		// Calls whose client went away end at once (their context ends);
		// let them record that before the kernel closes.
		done := make(chan struct{})
		go func() { g.calls.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(closeGrace):
		}
		g.cancel()
		g.wg.Wait()
		g.results.close()
	})
	return nil
}

// Server returns the MCP server that clients connect to.
func (g *Gateway) Server() *mcp.Server { return g.server }

// WaitReady blocks until every upstream has finished its first connection
// attempt (connected or failed), so that a client connecting next sees
// their tools, or ctx ends.
func (g *Gateway) WaitReady(ctx context.Context) error {
	for _, u := range g.ups {
		select {
		case <-u.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Run serves one client over t (for example &mcp.StdioTransport{}) until
// the client disconnects or ctx ends.
func (g *Gateway) Run(ctx context.Context, t mcp.Transport) error {
	return g.server.Run(ctx, t)
}

// Connect serves one client over t in the background and returns its
// session.
func (g *Gateway) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return g.server.Connect(ctx, t, nil)
}

// HTTPHandler serves the gateway over streamable HTTP. It keeps the SDK's
// protection against DNS rebinding (a loopback listener refuses a
// non-loopback Host) and refuses cross-origin requests from browsers.
func (g *Gateway) HTTPHandler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server },
		&mcp.StreamableHTTPOptions{SessionTimeout: 30 * time.Minute})
	// A web page the person visits must not drive the gateway.
	return http.NewCrossOriginProtection().Handler(h)
}

// Health reports the health of every upstream, by name.
func (g *Gateway) Health() []UpstreamHealth {
	out := make([]UpstreamHealth, 0, len(g.ups))
	for _, u := range g.ups {
		out = append(out, u.snapshot())
	}
	return out
}

// Tools lists the names of the tools offered to clients, sorted.
func (g *Gateway) Tools() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.tools))
	for n := range g.tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (g *Gateway) logf(format string, args ...any) {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	fmt.Fprintf(g.log, "overseer mcp: "+format+"\n", args...)
}

// watchPolicy re-reads the user policy layer and re-publishes the tools
// when the policy changed, so that tools hidden by policy come and go.
// Owned by the gateway; exits when ctx ends.
func (g *Gateway) watchPolicy(ctx context.Context, every time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.clk.After(every):
		}
		if err := g.k.Engine.Reload(ctx); err != nil && ctx.Err() == nil {
			g.logf("reloading the user policy (calls go to a person until fixed): %v", err)
		}
		ver, err := g.k.Pins.Version(ctx)
		if err != nil && ctx.Err() == nil {
			g.logf("reading the MCP tool pins: %v", err)
		}
		if g.currentMark() != g.markSeen() || err == nil && ver != g.pinVer {
			g.pinVer = ver
			g.publish()
		}
	}
}

func (g *Gateway) currentMark() policyMark {
	m := policyMark{admin: g.k.Engine.Policy()}
	if u := g.k.Engine.UserRules(); len(u) > 0 {
		m.user0, m.userLen = u[0], len(u)
	}
	return m
}

func (g *Gateway) markSeen() policyMark {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mark
}

// publish recomputes what clients are offered from every upstream's last
// lists, the configuration and the policy, and registers the changes (the
// SDK tells clients the lists changed).
func (g *Gateway) publish() {
	g.pubMu.Lock()
	defer g.pubMu.Unlock()
	mark := g.currentMark()
	g.mu.Lock()
	oldTools, oldPrompts, oldRes, oldTpl := g.tools, g.prompts, g.resources, g.templates
	g.mu.Unlock()

	tools := map[string]*toolEntry{}
	withheld := map[string]string{}
	prompts := map[string]*promptEntry{}
	resources := map[string]*resourceEntry{}
	templates := map[string]*templateEntry{}
	var userRules []*policy.Compiled
	if mark.userLen > 0 {
		userRules = g.k.Engine.UserRules()
	}
	for _, u := range g.ups {
		if u.cfg.Hidden {
			continue
		}
		l := u.offered()
		for _, t := range l.tools {
			if t == nil || u.cfg.Hides(t.Name) {
				continue
			}
			name := u.name + Separator + t.Name
			if err := validToolName(name); err != nil {
				g.logf("upstream %s: tool %q cannot be offered: %v", u.name, t.Name, err)
				continue
			}
			if ok, why := g.pinned(u, name, t); !ok {
				withheld[name] = why
				continue
			}
			e := g.toolEntry(u, name, t, oldTools[name])
			if hiddenByPolicy(mark.admin.Rules, name, e.kind) || hiddenByPolicy(userRules, name, e.kind) {
				continue
			}
			tools[name] = e
		}
		for _, p := range l.prompts {
			if p == nil {
				continue
			}
			name := u.name + Separator + p.Name
			def := mcppin.Definition{Kind: mcppin.KindPrompt, Name: p.Name, Title: p.Title, Description: p.Description}
			if len(p.Arguments) > 0 {
				def.Arguments = p.Arguments
			}
			if ok, why := g.pinnedDef(u, name, def); !ok {
				withheld[withheldKey(mcppin.KindPrompt, name)] = why
				continue
			}
			prompts[name] = &promptEntry{up: u, orig: p.Name, sig: sigOf(p)}
		}
		for _, r := range l.resources {
			if r == nil {
				continue
			}
			if _, taken := resources[r.URI]; taken {
				continue
			}
			def := mcppin.Definition{Kind: mcppin.KindResource, Name: r.Name, Title: r.Title, Description: r.Description,
				URI: r.URI, MIMEType: r.MIMEType, Annotations: pinnedAnnotations(r.Annotations)}
			if ok, why := g.pinnedDef(u, r.URI, def); !ok {
				withheld[withheldKey(mcppin.KindResource, r.URI)] = why
				continue
			}
			resources[r.URI] = &resourceEntry{up: u, sig: sigOf(r)}
		}
		for _, t := range l.templates {
			if t == nil {
				continue
			}
			if _, taken := templates[t.URITemplate]; taken {
				continue
			}
			def := mcppin.Definition{Kind: mcppin.KindTemplate, Name: t.Name, Title: t.Title, Description: t.Description,
				URITemplate: t.URITemplate, MIMEType: t.MIMEType, Annotations: pinnedAnnotations(t.Annotations)}
			if ok, why := g.pinnedDef(u, t.URITemplate, def); !ok {
				withheld[withheldKey(mcppin.KindTemplate, t.URITemplate)] = why
				continue
			}
			templates[t.URITemplate] = &templateEntry{up: u, sig: sigOf(t)}
		}
	}

	// Register before swapping the maps in, so a handler never finds an
	// entry the server does not offer; remove after.
	for name, e := range tools {
		if o := oldTools[name]; o == nil || o.sig != e.sig || o.up != e.up {
			if err := g.addTool(e); err != nil {
				g.logf("upstream %s: tool %q cannot be offered: %v", e.up.name, e.orig, err)
				delete(tools, name)
			}
		}
	}
	for name, p := range prompts {
		if o := oldPrompts[name]; o == nil || o.sig != p.sig || o.up != p.up {
			g.addPrompt(name, p)
		}
	}
	for uri, r := range resources {
		if o := oldRes[uri]; o == nil || o.sig != r.sig || o.up != r.up {
			g.addResource(uri, r)
		}
	}
	for tpl, t := range templates {
		if o := oldTpl[tpl]; o == nil || o.sig != t.sig || o.up != t.up {
			g.addTemplate(tpl, t)
		}
	}
	g.mu.Lock()
	g.tools, g.prompts, g.resources, g.templates, g.mark = tools, prompts, resources, templates, mark
	g.withheld = withheld
	g.mu.Unlock()
	if gone := missing(oldTools, tools); len(gone) > 0 {
		g.server.RemoveTools(gone...)
	}
	if gone := missing(oldPrompts, prompts); len(gone) > 0 {
		g.server.RemovePrompts(gone...)
	}
	if gone := missing(oldRes, resources); len(gone) > 0 {
		g.server.RemoveResources(gone...)
	}
	if gone := missing(oldTpl, templates); len(gone) > 0 {
		g.server.RemoveResourceTemplates(gone...)
	}
}

// pinned checks an upstream tool's definition against its pin: false
// (with the reason) withholds it.
func (g *Gateway) pinned(u *upstream, name string, t *mcp.Tool) (bool, string) {
	def := mcppin.Definition{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
		OutputSchema: t.OutputSchema}
	if t.Annotations != nil {
		def.Annotations = t.Annotations
	}
	return g.pinnedDef(u, name, def)
}

// pinnedDef checks an upstream definition (a tool, a prompt, a resource, a
// resource template) against its pin: false (with the reason) withholds
// it. Something a person should know of (a new pending definition, a
// flagged one) is audited as an alert. name is what clients are offered.
func (g *Gateway) pinnedDef(u *upstream, name string, def mcppin.Definition) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := g.k.Pins.Check(ctx, u.name, def, g.pinCfg)
	if o.New {
		what := "tool"
		if def.Kind != mcppin.KindTool {
			what = strings.ReplaceAll(def.Kind.String(), "_", " ")
		}
		summary := fmt.Sprintf("MCP %s %s of server %s: %s", what, def.Key(), u.name, firstLine(o.Why))
		g.logf("%s", summary)
		al := kernel.Alert{Kind: "mcp_definition", Summary: summary, Server: u.name, Tool: def.Key()}
		if o.Pin != nil {
			al.Detail = o.Pin
		}
		if _, err := g.k.Audit.Append(ctx, audit.Entry{Type: audit.TypeAlert, Tool: name, Data: al}); err != nil {
			g.logf("recording an alert: %v", err)
		}
	}
	if o.Status == mcppin.Withheld {
		return false, o.Why
	}
	return true, ""
}

// withheldKey is the key of a withheld definition in Gateway.withheld: a
// tool's offered name as it is, other kinds prefixed with their kind.
func withheldKey(kind mcppin.Kind, name string) string {
	if kind == mcppin.KindTool {
		return name
	}
	return string(kind) + ":" + name
}

// pinnedAnnotations is what is pinned of a resource's annotations: who it
// is for and its priority, not when it last changed.
func pinnedAnnotations(a *mcp.Annotations) any {
	if a == nil || len(a.Audience) == 0 && a.Priority == 0 {
		return nil
	}
	m := map[string]any{}
	if len(a.Audience) > 0 {
		m["audience"] = a.Audience
	}
	if a.Priority != 0 {
		m["priority"] = a.Priority
	}
	return m
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// withheldWhy says why an offered name is withheld.
func (g *Gateway) withheldWhy(name string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	why, ok := g.withheld[name]
	return why, ok
}

// Withheld lists the tools withheld from clients, by offered name, with
// the reason; withheld prompts, resources and resource templates are
// listed as "prompt:NAME", "resource:URI" and "resource_template:TEMPLATE".
func (g *Gateway) Withheld() map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]string, len(g.withheld))
	for k, v := range g.withheld {
		out[k] = v
	}
	return out
}

func missing[V any](old, cur map[string]V) []string {
	var out []string
	for k := range old {
		if _, ok := cur[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func sigOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unencodable:%p", v)
	}
	return string(b)
}

// toolEntry builds the entry of an upstream tool, reusing the compiled
// schema of an unchanged one.
func (g *Gateway) toolEntry(u *upstream, name string, t *mcp.Tool, old *toolEntry) *toolEntry {
	sig := sigOf(t)
	if old != nil && old.sig == sig && old.up == u {
		return old
	}
	e := &toolEntry{name: name, up: u, orig: t.Name, kind: action.KindMCP, sig: sig}
	if m, ok := u.cfg.Tools[t.Name]; ok {
		e.kind, e.arg = m.Kind, m.Arg
	}
	if a := t.Annotations; a != nil {
		e.ann = mcpguard.Annotations{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint,
			Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}
	}
	e.schema = compileSchema(t.InputSchema)
	cp := *t
	cp.Name = name
	cp.InputSchema = objectSchema(t.InputSchema)
	e.exposed = &cp
	return e
}

// objectSchema returns the schema as a JSON object of type "object", as
// the protocol requires of an input schema.
func objectSchema(raw any) any {
	var m map[string]any
	if b, err := json.Marshal(raw); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	if m == nil {
		m = map[string]any{}
	}
	if m["type"] != "object" {
		m["type"] = "object"
	}
	return m
}

// addTool registers a tool; the SDK panics on definitions it rejects.
func (g *Gateway) addTool(e *toolEntry) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	name := e.name
	g.server.AddTool(e.exposed, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.call(ctx, name, req), nil
	})
	return nil
}

func (g *Gateway) addPrompt(name string, p *promptEntry) {
	var def *mcp.Prompt
	for _, x := range p.up.offered().prompts {
		if x != nil && x.Name == p.orig {
			cp := *x
			cp.Name = name
			def = &cp
		}
	}
	if def == nil {
		return
	}
	g.server.AddPrompt(def, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		g.mu.Lock()
		e := g.prompts[name]
		g.mu.Unlock()
		if e == nil {
			return nil, fmt.Errorf("prompt %q is no longer offered", name)
		}
		// Judged and recorded first, by its arguments (reads.go).
		a, err := g.promptAction(req, e)
		if err != nil {
			return nil, err
		}
		actionID, err := g.judgeRead(ctx, a, "getting the prompt "+name)
		if err != nil {
			return nil, err
		}
		cs, err := e.up.session()
		if err != nil {
			return nil, err
		}
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: e.orig, Arguments: req.Params.Arguments})
		var sb strings.Builder
		if err != nil {
			sb.WriteString(err.Error())
		} else if res != nil {
			for _, m := range res.Messages {
				if m == nil {
					continue
				}
				switch c := m.Content.(type) {
				case *mcp.TextContent:
					sb.WriteString(c.Text)
				case *mcp.EmbeddedResource:
					if c.Resource != nil {
						sb.WriteString(c.Resource.Text)
					}
				}
				sb.WriteByte('\n')
			}
		}
		g.recordRead(actionID, a, sb.String(), err != nil)
		return res, err
	})
}

func (g *Gateway) addResource(uri string, r *resourceEntry) {
	var def *mcp.Resource
	for _, x := range r.up.offered().resources {
		if x != nil && x.URI == uri {
			cp := *x
			def = &cp
		}
	}
	if def == nil {
		return
	}
	g.server.AddResource(def, g.readResource)
}

func (g *Gateway) addTemplate(tpl string, t *templateEntry) {
	var def *mcp.ResourceTemplate
	for _, x := range t.up.offered().templates {
		if x != nil && x.URITemplate == tpl {
			cp := *x
			def = &cp
		}
	}
	if def == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			g.logf("upstream %s: resource template %q cannot be offered: %v", t.up.name, tpl, r)
		}
	}()
	g.server.AddResourceTemplate(def, g.readTemplate(tpl))
}

func (g *Gateway) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if why, ok := g.withheldWhy(withheldKey(mcppin.KindResource, req.Params.URI)); ok {
		return nil, fmt.Errorf("Overseer: the resource %s is withheld: %s", req.Params.URI, why)
	}
	u := g.resourceOwner(req.Params.URI)
	if u == nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	return g.readFrom(ctx, req, u)
}

// readFrom reads a resource from its upstream, judged first (reads.go):
// a file:// URI as a read of that file — a server's file template would
// otherwise hand the client any file the server can read, Overseer's token
// and sealing key too, unjudged and unrecorded — an http(s) URI as a fetch,
// any other as a read of the server's own data. Its contents are recorded
// as the read's result.
func (g *Gateway) readFrom(ctx context.Context, req *mcp.ReadResourceRequest, u *upstream) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	a, err := g.resourceAction(req, u)
	if err != nil {
		return nil, err
	}
	actionID, err := g.judgeRead(ctx, a, "reading "+uri)
	if err != nil {
		return nil, err
	}
	cs, err := u.session()
	if err != nil {
		return nil, err
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	var sb strings.Builder
	if err != nil {
		sb.WriteString(err.Error())
	} else if res != nil {
		for _, c := range res.Contents {
			if c != nil && c.Text != "" {
				sb.WriteString(c.Text)
				sb.WriteByte('\n')
			}
		}
	}
	g.recordRead(actionID, a, sb.String(), err != nil)
	return res, err
}

// readResourceTool names a resource read in the actions it is judged as.
const readResourceTool = "read_resource"

// fileURIPath is the path a file:// URI names.
func fileURIPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || !strings.EqualFold(u.Scheme, "file") {
		return "", strings.HasPrefix(strings.ToLower(strings.TrimSpace(uri)), "file:")
	}
	p := u.Path
	if p == "" {
		p = u.Opaque
	}
	return p, true
}

// judgeRead judges a read the gateway makes for a client (a resource, a
// prompt): it returns the action's id when the read may go ahead, an error
// (that the client shows) when it is blocked, denied or still waits for a
// person. what says what is read ("reading note://x"). A read a person
// approved is picked up by the identical read, once.
func (g *Gateway) judgeRead(ctx context.Context, a *action.Action, what string) (string, error) {
	if apr, err := g.k.Gate.TakeApproved(ctx, a.ArgsHash(), gate.CallerOf(a)); err == nil {
		return apr.ActionID, nil
	}
	sub, err := g.k.SubmitBy(ctx, a, nil)
	if err != nil {
		return "", fmt.Errorf("Overseer could not record this read, so it was not made: %v", err)
	}
	v := sub.Verdict
	switch {
	case v.Level == action.Block:
		return "", fmt.Errorf("Overseer blocked %s: %s. Do not retry it", what, v.Summary())
	case v.Level.RunsWithoutPerson():
		return a.ID, nil
	case !v.Level.NeedsPerson() || sub.Approval == nil:
		return "", fmt.Errorf("Overseer: %s needs a person, but no approval could be opened; nothing was read", what)
	}
	wctx, cancel := context.WithTimeout(ctx, g.cfg.Hold.Get(DefaultHold))
	defer cancel()
	apr, err := g.k.Wait(wctx, sub.Approval.ID)
	switch {
	case err == nil && apr != nil && gate.Allowed(apr):
		return apr.ActionID, nil
	case err == nil && apr != nil && apr.Status.Terminal():
		return "", fmt.Errorf("Overseer: %s was refused (approval %s, %s); nothing was read", what, apr.ID, apr.Status)
	}
	return "", fmt.Errorf("Overseer: %s waits for a person's answer (pending approval %s, level %s: %s). "+
		"Nothing was read. Ask the user to answer it (overseer approve %s), then read it again",
		what, sub.Approval.ID, v.Level, v.Summary(), sub.Approval.ID)
}

func (g *Gateway) readTemplate(tpl string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		g.mu.Lock()
		e := g.templates[tpl]
		g.mu.Unlock()
		if e == nil {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		if why, ok := g.withheldWhy(withheldKey(mcppin.KindResource, req.Params.URI)); ok {
			return nil, fmt.Errorf("Overseer: the resource %s is withheld: %s", req.Params.URI, why)
		}
		return g.readFrom(ctx, req, e.up)
	}
}

// resourceOwner finds the upstream of a resource URI: the one listing it,
// else the first with resource templates.
func (g *Gateway) resourceOwner(uri string) *upstream {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.resources[uri]; r != nil {
		return r.up
	}
	var names []string
	for tpl := range g.templates {
		names = append(names, tpl)
	}
	sort.Strings(names)
	for _, n := range names {
		return g.templates[n].up
	}
	return nil
}

func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	u := g.resourceOwner(req.Params.URI)
	if u == nil {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	cs, err := u.session()
	if err != nil {
		return err
	}
	return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: req.Params.URI})
}

func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	u := g.resourceOwner(req.Params.URI)
	if u == nil {
		return nil
	}
	cs, err := u.session()
	if err != nil {
		return nil // nothing to undo on a server that is gone
	}
	return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: req.Params.URI})
}

func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := *req.Params
	var u *upstream
	if p.Ref != nil {
		ref := *p.Ref
		switch ref.Type {
		case "ref/prompt":
			g.mu.Lock()
			if e := g.prompts[ref.Name]; e != nil {
				u, ref.Name = e.up, e.orig
			}
			g.mu.Unlock()
		case "ref/resource":
			u = g.resourceOwner(ref.URI)
		}
		p.Ref = &ref
	}
	if u == nil {
		return &mcp.CompleteResult{}, nil
	}
	cs, err := u.session()
	if err != nil {
		return nil, err
	}
	p.Meta = nil
	return cs.Complete(ctx, &p)
}

// resourceUpdated forwards an upstream's resource update to subscribed
// clients.
func (g *Gateway) resourceUpdated(ctx context.Context, p *mcp.ResourceUpdatedNotificationParams) {
	if p == nil {
		return
	}
	if err := g.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: p.URI}); err != nil {
		g.logf("forwarding a resource update: %v", err)
	}
}

// forwardLog forwards an upstream's log message to every client (each at
// the level it asked for), naming the upstream.
func (g *Gateway) forwardLog(ctx context.Context, server string, p *mcp.LoggingMessageParams) {
	if p == nil {
		return
	}
	cp := *p
	cp.Meta = nil
	cp.Logger = server
	if p.Logger != "" {
		cp.Logger = server + "/" + p.Logger
	}
	for ss := range g.server.Sessions() {
		_ = ss.Log(ctx, &cp)
	}
}

// progressTarget is where an upstream's progress for a forwarded call goes.
type progressTarget struct {
	ss    *mcp.ServerSession
	token any
}

// trackProgress returns the token to send upstream for a call whose client
// asked for progress, and a function that forgets it.
func (g *Gateway) trackProgress(ss *mcp.ServerSession, clientToken any) (string, func()) {
	tok := fmt.Sprintf("%s-%d", g.instance, g.progSeq.Add(1))
	g.progMu.Lock()
	g.progress[tok] = progressTarget{ss: ss, token: clientToken}
	g.progMu.Unlock()
	return tok, func() {
		g.progMu.Lock()
		delete(g.progress, tok)
		g.progMu.Unlock()
	}
}

// forwardProgress forwards an upstream's progress to the client that made
// the call.
func (g *Gateway) forwardProgress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	if p == nil {
		return
	}
	key := fmt.Sprint(p.ProgressToken)
	g.progMu.Lock()
	t, ok := g.progress[key]
	g.progMu.Unlock()
	if !ok || t.ss == nil {
		return
	}
	_ = t.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: t.token, Message: p.Message,
		Progress: p.Progress, Total: p.Total})
}

// validToolName checks a name the way the protocol restricts tool names.
func validToolName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("a tool name must have 1 to 128 characters")
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.", r)
		if !ok {
			return fmt.Errorf("a tool name may not contain %q", r)
		}
	}
	return nil
}

// hiddenByPolicy reports whether a layer's rules block every call of the
// tool, whatever its arguments: the first rule that could match it is an
// unconditional block. Then the tool is not offered at all. A rule with a
// condition, a session, an exact call or an agent pattern could match only
// some calls, so a tool is never hidden because of one.
func hiddenByPolicy(rules []*policy.Compiled, tool string, kind action.Kind) bool {
	if len(rules) == 0 {
		return false
	}
	probe := &action.Action{Tool: tool, Kind: kind, Args: map[string]any{}}
	for _, st := range policy.Trace(rules, probe) {
		if st.Err != nil {
			return false
		}
		if !st.Matched {
			if st.Failed == policy.CondTool || st.Failed == policy.CondKind {
				continue
			}
			return false
		}
		r := st.Rule
		return r.Level == action.Block && r.When == "" && r.Session == "" && r.ArgsHash == "" && len(r.Agent) == 0
	}
	return false
}

// KernelGuards builds the kernel's standard guards and adds the mcp guard
// (configured from the policy's guards.mcp section) unless they include it
// already. Pass it as kernel.Config.Guards where a kernel serves the
// gateway.
func KernelGuards(p *policy.Policy, env kernel.GuardEnv) ([]guard.Guard, error) {
	gs, err := kernel.DefaultGuards(p, env)
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		if g != nil && g.Name() == mcpguard.Name {
			return gs, nil
		}
	}
	mg, err := mcpguard.FromPolicy(p)
	if err != nil {
		return nil, err
	}
	return append(gs, mg), nil
}
