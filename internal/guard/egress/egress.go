// Package egress is the egress guard: it judges what an agent's outgoing
// requests carry and where they go, whichever tool makes them — a web
// fetch (URL, headers, body), an MCP tool call (its arguments), or a shell
// command that sends data (curl, wget, nc, scp, rsync, git push, cloud
// CLIs copying out, DNS lookups).
//
//   - A request that carries a secret (secrets.Analyzer: known credential
//     formats, generic secrets next to a keyword, and the values of the
//     person's own secret files and environment, after decoding) is at
//     least approve, with a preview naming the secret (masked), where it
//     was found and where it goes. A generic secret alone is confirm.
//   - A destination on the policy's deny list is block.
//   - A session that read a secret earlier (any reader: the effect model's
//     read or unknown path facts on a secret path) and now sends data to a
//     destination that is neither known (the allow list, package
//     registries and code hosts by default) nor approved by a person in the
//     session (a destination merely used before does not count)
//     is at least approve, naming the earlier read.
//
// The session memory lives in the store (Namespace), written by Observe
// when the kernel records an action or a person's approval, so it holds
// across hook processes.
package egress

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/secrets"
	"github.com/overseer-dev/overseer/internal/store"
)

// Name is the guard's name and its section in a policy's guards.
const Name = "egress"

// Policy is the guards.egress section of a policy.
type Policy struct {
	// Allow lists known destinations: host names, or "*.example.com" for
	// the sub-domains of one. Sending to them does not count as a new
	// destination after a secret read. A secret in a request is put to a
	// person wherever it goes.
	Allow []string `yaml:"allow,omitempty" json:"allow,omitempty"`
	// Deny lists destinations nothing may be sent to (block).
	Deny []string `yaml:"deny,omitempty" json:"deny,omitempty"`
	// NoDefaults drops the built-in known destinations (DefaultAllow).
	NoDefaults bool `yaml:"no_defaults,omitempty" json:"no_defaults,omitempty"`
	// OnSecret is the level of a request that carries a secret: approve
	// (the default) or block.
	OnSecret action.Level `yaml:"on_secret,omitempty" json:"on_secret,omitempty"`
}

// DefaultAllow are the destinations known by default: the package
// registries and the main code hosts.
var DefaultAllow = []string{
	// code hosts
	"github.com", "*.github.com", "*.githubusercontent.com", "gitlab.com", "*.gitlab.com", "bitbucket.org",
	"*.bitbucket.org", "codeberg.org", "git.sr.ht", "*.googlesource.com",
	// package registries
	"registry.npmjs.org", "*.npmjs.org", "npmjs.com", "www.npmjs.com", "registry.yarnpkg.com", "pypi.org",
	"*.pypi.org", "files.pythonhosted.org", "proxy.golang.org", "sum.golang.org", "pkg.go.dev", "go.dev",
	"golang.org", "crates.io", "*.crates.io", "rubygems.org", "*.rubygems.org", "repo.maven.apache.org",
	"repo1.maven.org", "*.maven.org", "plugins.gradle.org", "nuget.org", "*.nuget.org", "packagist.org",
	"*.packagist.org", "hex.pm", "*.hex.pm", "pub.dev", "cdn.cocoapods.org", "deb.debian.org",
	"security.debian.org", "archive.ubuntu.com", "security.ubuntu.com", "dl-cdn.alpinelinux.org",
	"registry-1.docker.io", "*.docker.io", "ghcr.io", "quay.io", "gcr.io", "*.pkg.dev", "registry.terraform.io",
	"cran.r-project.org", "conda.anaconda.org", "repo.anaconda.com", "mcr.microsoft.com", "public.ecr.aws",
	// Go modules' own hosts (go get asks them through the proxy)
	"gopkg.in", "go.uber.org", "google.golang.org", "k8s.io", "sigs.k8s.io", "go.opentelemetry.io", "honnef.co",
	"go.etcd.io", "gotest.tools", "modernc.org",
}

// publicPaste are hosts under known domains that publish what is sent to
// them (a public gist): they are never known destinations by default,
// only when the policy's allow list names them.
var publicPaste = map[string]bool{"gist.github.com": true, "gist.githubusercontent.com": true}

// Validate reports the first entry of p that cannot be used.
func (p Policy) Validate() error {
	_, err := p.compile()
	return err
}

type compiled struct {
	allow, deny hostSet
	// named are the policy's own allow entries (a public paste host is
	// known only when named there).
	named    hostSet
	onSecret action.Level
}

type hostSet struct {
	names    map[string]bool
	suffixes []string
}

func (h hostSet) has(dest string) bool {
	if h.names[dest] {
		return true
	}
	for _, s := range h.suffixes {
		if strings.HasSuffix(dest, s) {
			return true
		}
	}
	return false
}

func makeHostSet(entries []string) (hostSet, error) {
	h := hostSet{names: map[string]bool{}}
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(e), "."))
		switch {
		case e == "" || e == "*" || e == "*.":
			return h, fmt.Errorf("egress: %q is not a destination (a host name or *.domain)", e)
		case strings.HasPrefix(e, "*."):
			h.suffixes = append(h.suffixes, e[1:])
		case strings.ContainsAny(e, "/ *@"):
			return h, fmt.Errorf("egress: %q is not a destination (a host name or *.domain)", e)
		default:
			h.names[e] = true
		}
	}
	return h, nil
}

func (p Policy) compile() (*compiled, error) {
	allow := p.Allow
	if !p.NoDefaults {
		allow = append(append([]string(nil), DefaultAllow...), p.Allow...)
	}
	c := &compiled{onSecret: action.Approve}
	var err error
	if c.allow, err = makeHostSet(allow); err != nil {
		return nil, fmt.Errorf("allow: %w", err)
	}
	if c.named, err = makeHostSet(p.Allow); err != nil {
		return nil, fmt.Errorf("allow: %w", err)
	}
	if c.deny, err = makeHostSet(p.Deny); err != nil {
		return nil, fmt.Errorf("deny: %w", err)
	}
	switch p.OnSecret {
	case action.Unset, action.Approve:
	case action.Block:
		c.onSecret = action.Block
	default:
		return nil, fmt.Errorf("egress: on_secret is %s; it may be approve or block", p.OnSecret)
	}
	return c, nil
}

// Env is what the guard needs besides its policy.
type Env struct {
	// Home is Overseer's home, where the fingerprint key lives ("" keeps a
	// key for this process only).
	Home string
	// Store keeps the session memory; nil disables the flow check.
	Store store.StateStore
	// SecretPath says whether a path is a secret (the paths guard's list).
	SecretPath func(path string) (pattern string, ok bool)
	// Environ is the environment whose secret values are fingerprinted;
	// nil means this process's.
	Environ []string
	// UserHome is the person's home directory; "" means this process's.
	UserHome string
	// Clock defaults to the real one.
	Clock clock.Clock
}

// Guard is the egress guard. It is safe for concurrent use.
type Guard struct {
	pol    *compiled
	polErr error
	env    Env

	once    sync.Once
	initErr error
	base    *secrets.Fingerprints // the environment's values
	files   *fileValues
	an      *secrets.Analyzer

	setsMu sync.Mutex
	sets   map[string]setCache // by directory: its secret files' values

	// checked are the session memories Check read, by action id, for
	// Observe of the same action to tell without a read of its own
	// whether it changes anything (see update).
	checkedMu sync.Mutex
	checked   map[string]checkedMemory
}

// checkedMemory is a session's memory as Check read it for an action.
type checkedMemory struct {
	key string
	mem Memory
}

// maxChecked bounds Guard.checked: memories of actions never observed
// (blocked ones, dry runs) do not pile up.
const maxChecked = 64

// rememberChecked keeps, of the memory Check read for action id, what
// tells whether Observe changes it: the destinations. A secret read is a
// change whatever the memory holds, so the reads are not kept.
func (g *Guard) rememberChecked(id, key string, m Memory) {
	if id == "" {
		return
	}
	g.checkedMu.Lock()
	defer g.checkedMu.Unlock()
	if g.checked == nil || len(g.checked) >= maxChecked {
		g.checked = map[string]checkedMemory{}
	}
	g.checked[id] = checkedMemory{key: key, mem: Memory{Dests: m.Dests, Cleared: m.Cleared, At: m.At}}
}

// takeChecked returns (and forgets) the memory Check read for action id
// under key, or nil.
func (g *Guard) takeChecked(id, key string) *Memory {
	g.checkedMu.Lock()
	defer g.checkedMu.Unlock()
	c, ok := g.checked[id]
	if !ok {
		return nil
	}
	delete(g.checked, id)
	if c.key != key {
		return nil
	}
	return &c.mem
}

var _ guard.Guard = (*Guard)(nil)

// New returns the guard. A policy that does not compile makes every check
// of a sending action fail (the engine then never lets it run unasked).
func New(pol Policy, env Env) *Guard {
	c, err := pol.compile()
	if env.Clock == nil {
		env.Clock = clock.Real{}
	}
	if env.UserHome == "" {
		env.UserHome, _ = os.UserHomeDir()
	}
	return &Guard{pol: c, polErr: err, env: env}
}

// Name returns "egress".
func (g *Guard) Name() string { return Name }

// init reads the key and fingerprints the environment, once, on the first
// action that sends anything.
func (g *Guard) init() error {
	g.once.Do(func() {
		key, err := loadKey(g.env.Home)
		if err != nil {
			g.initErr = err
			return
		}
		g.base, _ = secrets.NewFingerprints(key)
		empty, _ := secrets.NewFingerprints(key)
		g.files = &fileValues{fp: empty}
		environ := g.env.Environ
		if environ == nil {
			environ = os.Environ()
		}
		for name, vals := range envValues(environ) {
			for _, v := range vals {
				g.base.Add("the environment variable "+name, v)
			}
		}
		g.an = secrets.New(secrets.Options{Known: g.base})
	})
	return g.initErr
}

// Check judges the outgoing requests of a.
func (g *Guard) Check(ctx context.Context, a *action.Action) ([]guard.Finding, error) {
	reqs := requests(a)
	if len(reqs) == 0 {
		return nil, nil
	}
	if g.polErr != nil {
		return nil, g.polErr
	}
	if err := g.init(); err != nil {
		return nil, err
	}
	reqs = append(reqs, g.configRequests(reqs, a.Cwd)...)
	var fs []guard.Finding
	dests := make([]string, 0, len(reqs))
	for _, r := range reqs {
		dests = appendNew(dests, r.Dest)
	}
	for _, d := range dests {
		if g.pol.deny.has(d) {
			fs = append(fs, guard.Finding{Check: "egress.denied", Level: action.Block, Hard: true,
				Message: fmt.Sprintf("%s sends to %s, which the policy's egress deny list forbids", reqs[0].By, d)})
		}
	}
	var mem Memory
	if g.env.Store != nil && a.Session != "" {
		key := sessionKey(a.Agent, a.Session)
		m, err := load(ctx, g.env.Store, key)
		if err != nil {
			return fs, fmt.Errorf("egress: reading the session's memory: %w", err)
		}
		mem = m
		g.rememberChecked(a.ID, key, m)
	}
	an := g.analyzer(a.Cwd, mem)
	if r := g.reported(ctx); r != nil {
		an = an.With(r) // the agent's environment, as its hook reported it
	}
	var found []secrets.Finding
	for i := range reqs {
		r := &reqs[i]
		if len(r.Files) == 0 {
			continue
		}
		parts, unread, secretFiles := g.fileParts(r.Files, a.Cwd)
		r.Parts = append(r.Parts, parts...)
		if len(secretFiles) > 0 {
			shown := secretFiles
			if len(shown) > 8 {
				shown = shown[:8]
			}
			fs = append(fs, guard.Finding{Check: "egress.secret-file", Level: g.pol.onSecret, Hard: true,
				Message: fmt.Sprintf("%s sends %s to %s: %s", r.By, plural(len(secretFiles), "secret file"), r.Dest, strings.Join(shown, "; ")),
				Preview: &action.Preview{Summary: fmt.Sprintf("%s sends %s to %s", r.By, plural(len(secretFiles), "secret file"), r.Dest), Items: shown}})
		}
		for _, u := range unread {
			fs = append(fs, guard.Finding{Check: "egress.file-unread", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("%s sends the content of a file to %s that could not be read to scan it for secrets: %s", r.By, r.Dest, u)})
		}
	}
	for _, r := range reqs {
		if len(r.Parts) > 0 {
			found = append(found, an.ScanParts(r.Parts)...)
		}
		n := 0
		for _, p := range r.Parts {
			n += len(p.Text)
		}
		if n > secrets.DefaultMaxBytes {
			fs = append(fs, guard.Finding{Check: "egress.unscanned", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("%s sends %d bytes to %s; only the first %d were scanned for secrets", r.By, n, r.Dest, secrets.DefaultMaxBytes)})
		}
	}
	to := strings.Join(dests, ", ")
	if len(found) > 0 {
		fs = append(fs, g.secretFinding(reqs[0].By, to, found))
	}
	if f, ok := g.flowFinding(reqs[0].By, dests, mem); ok {
		fs = append(fs, f)
	}
	if cmd := commandText(a.Args); cmd != "" && len(a.Facts.Commands) > 0 {
		for _, r := range reqs {
			for _, sc := range r.Scripts {
				cmd += "\n" + sc
			}
		}
		if f, ok := g.variableFinding(reqs[0].By, cmd, a.Facts.Commands, dests, mem); ok {
			fs = append(fs, f)
		}
	}
	return fs, nil
}

// variableFinding reports a shell command that sends data and reads secret
// environment variables (or the whole environment), when a destination is
// neither known nor the variables' vendor: the shell, or the interpreter,
// puts their values into what is sent, and the guard cannot see them.
// A destination a person approved a send to in this session is cleared;
// one merely used before is not: an agent could use a host once with
// nothing in it to make it "used".
func (g *Guard) variableFinding(by, cmd string, cmds []action.Command, dests []string, mem Memory) (guard.Finding, bool) {
	vars := secretVars(cmd, cmds)
	if len(vars) == 0 {
		return guard.Finding{}, false
	}
	var fresh []string
	for _, d := range dests {
		if g.known(d) || mem.cleared(d) {
			continue
		}
		vendor := true
		for _, v := range vars {
			if !vendorDest(v, d) {
				vendor = false
			}
		}
		if !vendor {
			fresh = append(fresh, d)
		}
	}
	if len(fresh) == 0 {
		return guard.Finding{}, false
	}
	to := strings.Join(fresh, ", ")
	what := strings.Join(vars, ", ")
	items := make([]string, 0, len(vars))
	for _, v := range vars {
		items = append(items, fmt.Sprintf("%s (put in by the shell, the interpreter or a pipe when it runs: not seen by Overseer)", v))
	}
	return guard.Finding{Check: "egress.secret-variable", Level: action.Approve, Hard: true,
		Message: fmt.Sprintf("%s sends data to %s, and the command reads secrets whose values Overseer cannot see: %s", by, to, what),
		Preview: &action.Preview{Summary: fmt.Sprintf("%s may send %s to %s", by, what, to), Items: items}}, true
}

// Analyzer returns the secret analyser with the known values the guard
// has without an action: the environment's and the home's credential
// files'. For scanning what comes back to the agent (tool results). If
// the guard cannot start (its key), the analyser finds formats only.
func (g *Guard) Analyzer() *secrets.Analyzer {
	if err := g.init(); err != nil {
		return secrets.New(secrets.Options{})
	}
	return g.analyzer("", Memory{})
}

// analyzer is the analyser with every known value that applies to a: the
// environment's, the home's credential files', the working directory's
// secret files' and those the session read.
func (g *Guard) analyzer(cwd string, mem Memory) *secrets.Analyzer {
	var sets []*secrets.Fingerprints
	if g.env.UserHome != "" {
		sets = append(sets, g.fileSet(g.env.UserHome, homeSecretFiles, true))
	}
	if cwd != "" && filepath.IsAbs(cwd) {
		sets = append(sets, g.fileSet(cwd, projectSecretFiles, false))
	}
	var vals []secrets.ValueFP
	for _, r := range mem.Reads {
		vals = append(vals, r.Values...)
	}
	if len(vals) > 0 {
		s := g.files.fp.Clone()
		for _, v := range vals {
			s.AddFP(v)
		}
		sets = append(sets, s)
	}
	return g.an.With(sets...)
}

// fileSet returns the fingerprints of the values of dir's files names,
// rebuilt only when one of the files changed (its stamp: inode, size,
// modification and change times) since the last call for dir. A set with
// a file that had not settled (see fileValues) is not remembered.
func (g *Guard) fileSet(dir string, names []string, tilde bool) *secrets.Fingerprints {
	var sig strings.Builder
	type file struct{ path, source string }
	var present []file
	keep := true
	for _, n := range names {
		p := filepath.Join(dir, n)
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		s, ok := guard.StampOf(st)
		keep = keep && ok
		fmt.Fprintf(&sig, "%s\x00%d\x00%d\x00%d\x00%d\x00%d\x00", n, s.Dev, s.Ino, s.Size, s.Mtime, s.Ctime)
		src := p
		if tilde {
			src = "~/" + n
		}
		present = append(present, file{p, src})
	}
	key := sig.String()
	g.setsMu.Lock()
	c, ok := g.sets[dir]
	g.setsMu.Unlock()
	if keep && ok && c.sig == key {
		return c.set
	}
	set := g.files.fp.Clone()
	for _, f := range present {
		vals, settled := g.files.read(f.path, f.source)
		keep = keep && settled
		for _, v := range vals {
			set.AddFP(v)
		}
	}
	if !keep {
		return set
	}
	g.setsMu.Lock()
	if g.sets == nil || len(g.sets) >= 64 {
		g.sets = map[string]setCache{}
	}
	g.sets[dir] = setCache{sig: key, set: set}
	g.setsMu.Unlock()
	return set
}

type setCache struct {
	sig string
	set *secrets.Fingerprints
}

// known reports a destination on the allow list (the defaults and the
// policy's), a public paste host only when the policy names it, and the
// agent's web search.
func (g *Guard) known(d string) bool {
	if d == "web search" {
		// The model provider's search engine: the query does not reach
		// a host the agent chooses (a secret in it is still found).
		return true
	}
	if publicPaste[d] {
		return g.pol.named.names[d]
	}
	return g.pol.allow.has(d)
}

// secretFinding reports the secrets a request carries.
func (g *Guard) secretFinding(by, to string, found []secrets.Finding) guard.Finding {
	generic := true
	for _, f := range found {
		if !f.Generic {
			generic = false
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return !found[i].Generic && found[j].Generic })
	items := make([]string, 0, len(found))
	for _, f := range found {
		items = append(items, f.String())
	}
	first := found[0].String()
	if generic {
		return guard.Finding{Check: "egress.possible-secret", Level: action.Confirm, Hard: true,
			Message: fmt.Sprintf("%s sends what looks like a secret to %s: %s", by, to, first),
			Preview: &action.Preview{Summary: fmt.Sprintf("%s sends data to %s that looks like a secret (a high-entropy value next to a keyword)", by, to), Items: items}}
	}
	return guard.Finding{Check: "egress.secret", Level: g.pol.onSecret, Hard: true,
		Message: fmt.Sprintf("%s sends a secret to %s: %s", by, to, first),
		Preview: &action.Preview{Summary: fmt.Sprintf("%s sends %s to %s", by, plural(len(found), "secret"), to), Items: items}}
}

func plural(n int, w string) string {
	if n == 1 {
		return "a " + w
	}
	return fmt.Sprintf("%d %ss", n, w)
}

// flowFinding reports sending to new destinations after a secret read.
func (g *Guard) flowFinding(by string, dests []string, mem Memory) (guard.Finding, bool) {
	if len(mem.Reads) == 0 {
		return guard.Finding{}, false
	}
	var fresh []string
	for _, d := range dests {
		if !g.known(d) && !mem.cleared(d) {
			fresh = append(fresh, d)
		}
	}
	if len(fresh) == 0 {
		return guard.Finding{}, false
	}
	last := mem.Reads[len(mem.Reads)-1]
	read := fmt.Sprintf("%s (read by %s at %s)", last.Path, last.Tool, last.At.UTC().Format("15:04:05"))
	items := make([]string, 0, len(mem.Reads))
	for i := len(mem.Reads) - 1; i >= 0 && len(items) < 8; i-- {
		r := mem.Reads[i]
		items = append(items, fmt.Sprintf("read %s (secret: %s) by %s at %s", r.Path, r.Pattern, r.Tool, r.At.UTC().Format(time.RFC3339)))
	}
	more := ""
	if len(mem.Reads) > 1 {
		more = fmt.Sprintf(" and %d other secret read(s)", len(mem.Reads)-1)
	}
	to := strings.Join(fresh, ", ")
	return guard.Finding{Check: "egress.after-secret-read", Level: action.Approve, Hard: true,
		Message: fmt.Sprintf("this session read the secret %s%s, and %s now sends data to %s, a destination that is not known and that no person has approved a send to in this session",
			read, more, by, to),
		Preview: &action.Preview{Summary: fmt.Sprintf("%s sends data to %s, new to this session, after it read secrets", by, to), Items: items}}, true
}

// Refused forgets the reads of an action a person refused (or whose
// approval ran out or was withdrawn): it did not run, so the session did
// not read them, and its later sends are not judged as following them. A
// read the session made by another action stays.
func (g *Guard) Refused(ctx context.Context, a *action.Action) error {
	if g.env.Store == nil || a.Session == "" || a.ID == "" {
		return nil
	}
	return update(ctx, g.env.Store, sessionKey(a.Agent, a.Session), g.env.Clock.Now(), nil, func(m *Memory) bool {
		n := len(m.Reads)
		m.Reads = slices.DeleteFunc(m.Reads, func(r SecretRead) bool { return r.ActionID == a.ID && r.Pending })
		return len(m.Reads) != n
	})
}

// Observe remembers what a recorded action did, for the flow check: the
// secrets it read (or may read: any level below block, since a person may
// allow it), and the destinations it sent to once it runs (auto or notify,
// or approved by a person: answered). The kernel calls it after recording
// an action's verdict and after a person's approval.
func (g *Guard) Observe(ctx context.Context, a *action.Action, level action.Level, answered bool) error {
	if g.env.Store == nil || a.Session == "" {
		return nil
	}
	key := sessionKey(a.Agent, a.Session)
	seen := g.takeChecked(a.ID, key)
	if level == action.Block {
		return nil
	}
	var reads []SecretRead
	if !answered && g.env.SecretPath != nil {
		for _, p := range a.Facts.Paths {
			if p.Intent != action.PathRead && p.Intent != action.PathUnknown {
				continue
			}
			pat, ok := g.env.SecretPath(p.Path)
			if !ok {
				continue
			}
			if err := g.init(); err != nil {
				return err
			}
			reads = append(reads, SecretRead{Path: p.Path, Pattern: pat, Tool: a.Tool, ActionID: a.ID,
				At: g.env.Clock.Now(), Values: g.valuesUnder(p.Path), Pending: !level.RunsWithoutPerson()})
		}
	}
	if !answered {
		// A secret variable shown to the agent is a secret read: the agent
		// knows the value from now on.
		for _, v := range printedSecretVars(a.Facts.Commands) {
			if err := g.init(); err != nil {
				return err
			}
			reads = append(reads, SecretRead{Path: v, Pattern: "secret environment variable", Tool: a.Tool, ActionID: a.ID,
				At: g.env.Clock.Now(), Values: g.envValuesOf(v), Pending: !level.RunsWithoutPerson()})
		}
	}
	var dests []string
	if answered || level.RunsWithoutPerson() {
		for _, r := range requests(a) {
			dests = appendNew(dests, r.Dest)
		}
	}
	if len(reads) == 0 && len(dests) == 0 && !answered {
		return nil
	}
	return update(ctx, g.env.Store, key, g.env.Clock.Now(), seen, func(m *Memory) bool {
		changed := false
		if answered {
			// A person allowed it: its pending reads were made.
			for i := range m.Reads {
				if m.Reads[i].ActionID == a.ID && m.Reads[i].Pending {
					m.Reads[i].Pending = false
					changed = true
				}
			}
		}
		for _, r := range reads {
			dup := false
			for i := range m.Reads {
				if m.Reads[i].Path != r.Path {
					continue
				}
				switch {
				case !r.Pending, m.Reads[i].ActionID == r.ActionID:
					// A read made replaces the path's record (and one
					// action's read of it is kept once).
					m.Reads[i] = r
					dup = true
				case !m.Reads[i].Pending:
					// A read that was made is not replaced by one that
					// waits for a person (whose refusal would forget it).
					dup = true
				}
				// Another action's read that waits too is kept beside
				// it: each is forgotten only when its own action is
				// refused (one allowed, its duplicate refused, was read).
			}
			if !dup {
				m.Reads = append(m.Reads, r)
			}
			changed = true
		}
		for _, d := range dests {
			if !m.seen(d) {
				m.Dests = append(m.Dests, d)
				changed = true
			}
			if answered && !m.cleared(d) {
				m.Cleared = append(m.Cleared, d)
				changed = true
			}
		}
		return changed
	})
}

// valuesUnder fingerprints the values of a secret file, or of the files
// of a secret directory (a recursive read: ~/.aws, ~/.ssh), a bounded few.
func (g *Guard) valuesUnder(p string) []secrets.ValueFP {
	st, err := os.Stat(p)
	if err != nil {
		return nil
	}
	source := p
	if h := g.env.UserHome; h != "" && strings.HasPrefix(p, h+"/") {
		source = "~/" + strings.TrimPrefix(p, h+"/")
	}
	if st.Mode().IsRegular() {
		return g.files.of(p, source)
	}
	if !st.IsDir() {
		return nil
	}
	var out []secrets.ValueFP
	n := 0
	_ = filepath.WalkDir(p, func(q string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if strings.Count(strings.TrimPrefix(q, p), "/") >= 3 {
				return filepath.SkipDir
			}
			return nil
		}
		if n++; n > 32 || len(out) >= maxValuesRead {
			return filepath.SkipAll
		}
		src := q
		if h := g.env.UserHome; h != "" && strings.HasPrefix(q, h+"/") {
			src = "~/" + strings.TrimPrefix(q, h+"/")
		}
		out = append(out, g.files.of(q, src)...)
		return nil
	})
	if len(out) > maxValuesRead {
		out = out[:maxValuesRead]
	}
	return out
}

// envValuesOf fingerprints the value of a secret environment variable
// ("$NAME") in the judging process's environment (the agent's own, without
// a daemon); none for "the whole environment", whose values are known
// values of every call anyway.
func (g *Guard) envValuesOf(v string) []secrets.ValueFP {
	name, ok := strings.CutPrefix(v, "$")
	if !ok {
		return nil
	}
	environ := g.env.Environ
	if environ == nil {
		environ = os.Environ()
	}
	var out []secrets.ValueFP
	for _, val := range envValues(environ)[name] {
		if fp, ok := g.base.Fingerprint("the environment variable "+name, val); ok {
			out = append(out, fp)
		}
	}
	return out
}
