// Package paths is the hard guard for file system paths. It runs on every
// action that carries path facts — the file kinds (file_read, file_write,
// file_edit, file_delete) and the paths other guards derive, such as the
// targets of a shell command's rm.
//
// Before any rule sees a path, the guard resolves it the way the kernel
// would open it: "~" expanded, made absolute against the action's working
// directory, every symbolic link and ".." followed component by component.
// The resolved paths replace the naive ones in a.Facts.Paths, so the policy
// and the engine's own self-protection judge where the action really lands.
//
// Then it checks, for every path:
//
//   - a loop of symbolic links: block (hard);
//   - deleting the root, a top-level directory or the home directory, by
//     any program or tool: block (hard);
//   - Overseer's own home, database and policy files, also when reached
//     through a link: block (hard);
//   - control files (controls.txt: the agents' hook configurations, shell
//     start-up files, authorized_keys, cron and systemd units, git hooks):
//     a write, or a path given to a program whose effect on it is unknown,
//     is blocked (hard); for hook configurations deleting them, or a
//     directory that holds them, is blocked too; reading them passes;
//   - secrets (~/.ssh, ~/.aws, .env files, key files, …; a list of
//     patterns that a policy can extend): approve (hard), whatever the
//     intent;
//   - reading outside the readable paths (by default the working directory
//     and the output directory; public keys, ~/.ssh/*.pub, and what the
//     session itself created are readable anywhere): confirm (hard);
//   - writing outside the working directory and the output directory: the
//     guard classifies it as needing a person (soft, so a policy rule may
//     allow the path); writing inside the output directory is classified as
//     notify;
//   - read-before-edit: an edit of a file the session has not read in full,
//     or that changed since it was read (modification time moved and the
//     content hash differs), is refused with a message the agent can act
//     on. For Overseer's own builtin file_edit tool that is a block (hard):
//     the agent must read the file and try again. For other agents' edit
//     tools it is confirm (hard) and applies when Overseer holds evidence —
//     a recorded partial or outdated read — because those agents read files
//     through their own tools, which Overseer may not see, and enforce
//     read-before-edit themselves (Claude Code's Edit does); set
//     Config.StrictForeignEdits to also ask when no read was recorded.
//
// Every failure to judge a path (it cannot be resolved, the read record
// cannot be fetched) produces a finding that asks a person, never silence.
package paths

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// BuiltinAgent is the agent name of Overseer's own tool calls (the builtin
// tools run by `overseer tool run` and the supervised loop).
const BuiltinAgent = "overseer"

// BuiltinEditTool is the builtin edit tool's name; its edits are held to
// read-before-edit strictly.
const BuiltinEditTool = "file_edit"

// Config configures the guard. Zero values take the defaults.
type Config struct {
	// Home is the user's home directory, for "~" and the secret patterns.
	// Empty means the current user's home.
	Home string
	// OverseerHome is Overseer's data directory: no agent action may touch it.
	OverseerHome string
	// Protected are further paths no agent action may touch (the policy file).
	Protected []string
	// ReadablePaths are where agents may read without a person's yes.
	// Relative entries ("." included) are taken against the action's working
	// directory; "~/" is expanded. Empty means the working directory and
	// OutputDir.
	ReadablePaths []string
	// OutputDir is the output sandbox: writes inside it are classified as
	// notify. Empty means none.
	OutputDir string
	// Reads is where reads are recorded, for read-before-edit. Nil means no
	// reads are known: the builtin edit tool is refused on every file.
	Reads ReadTracker
	// Secrets extends the built-in secret patterns (see ParseSecrets).
	Secrets []string
	// Controls extends the built-in control files (controls.txt): files
	// no agent may write (hook configurations, shell start-up files, …).
	Controls []string
	// Default returns the policy's default level for a kind. The guard's
	// soft classification of writes outside the sandbox is never below it,
	// so the guard cannot lower a stricter default. Nil means confirm for
	// writes and approve for deletes.
	Default func(action.Kind) action.Level
	// StrictForeignEdits makes an edit by another agent's tool of a file no
	// read was recorded for reach a person (confirm), as the builtin tool's
	// is refused. Off by default: see the package documentation.
	StrictForeignEdits bool
	// Created tells which paths the action's session created (its own
	// scratch, such as a directory it made in /tmp): reading and writing
	// them is not a read or write outside the sandbox. Nil means none.
	Created CreatedTracker
}

// CreatedTracker tells which of paths an earlier action of a's session
// created. The kernel keeps them (perception.Bus.RecordCreated).
type CreatedTracker interface {
	CreatedBy(ctx context.Context, a *action.Action, paths []string) ([]bool, error)
}

// PolicyConfig is the paths guard's section of a policy file
// (`guards: {paths: …}`): what an operator may add to the defaults.
type PolicyConfig struct {
	// Secrets extends the built-in secret patterns.
	Secrets []string `yaml:"secrets" json:"secrets"`
	// StrictForeignEdits: see Config.StrictForeignEdits.
	StrictForeignEdits bool `yaml:"strict_foreign_edits" json:"strict_foreign_edits"`
}

// Validate reports the first entry of c that cannot be used.
func (c Config) Validate() error {
	for _, p := range c.Secrets {
		if err := ValidatePattern(p); err != nil {
			return err
		}
	}
	for _, p := range c.ReadablePaths {
		if strings.TrimSpace(p) == "" {
			return errors.New("paths: empty readable path")
		}
	}
	if c.OutputDir != "" && !filepath.IsAbs(c.OutputDir) && !strings.HasPrefix(c.OutputDir, "~/") {
		return fmt.Errorf("paths: output_dir %q must be absolute", c.OutputDir)
	}
	return nil
}

// Guard is the paths guard. It is immutable after New and safe for
// concurrent use.
type Guard struct {
	cfg       Config
	home      string
	protected []string // literal and resolved forms
	readable  []readable
	output    []string // literal and resolved forms; empty when none
	secrets   *secretMatcher
	controls  *controlMatcher
	search    []searchDir // $PATH's directories, in order (shadow.go)
	err       error       // configuration error: every Check fails closed
}

var _ guard.Guard = (*Guard)(nil)

// readable is one readable path: absolute (both forms) or relative to the
// action's working directory.
type readable struct {
	abs []string
	rel string
}

// New builds the guard. A configuration that does not validate yields a
// guard whose every Check returns an error, so the engine fails closed.
func New(cfg Config) *Guard {
	g := &Guard{cfg: cfg}
	g.home = cfg.Home
	if g.home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			g.home = h
		}
	}
	if g.home != "" {
		g.home = filepath.Clean(g.home)
	}
	if err := cfg.Validate(); err != nil {
		g.err = err
		return g
	}
	for _, p := range append([]string{cfg.OverseerHome}, cfg.Protected...) {
		if p == "" {
			continue
		}
		g.protected = append(g.protected, g.forms(p)...)
	}
	if cfg.OutputDir != "" {
		g.output = g.forms(cfg.OutputDir)
	}
	for _, p := range cfg.ReadablePaths {
		if filepath.IsAbs(p) || p == "~" || strings.HasPrefix(p, "~/") {
			g.readable = append(g.readable, readable{abs: g.forms(p)})
		} else {
			g.readable = append(g.readable, readable{rel: p})
		}
	}
	sm, err := compileSecrets(g.home, append(BuiltinSecrets(), cfg.Secrets...))
	if err != nil {
		g.err = err
		return g
	}
	g.secrets = sm
	controls := append(BuiltinControls(), cfg.Controls...)
	if ch := os.Getenv("CODEX_HOME"); ch != "" && filepath.IsAbs(ch) {
		controls = append(controls, filepath.Join(ch, "hooks.json")+" delete", filepath.Join(ch, "config.toml")+" delete")
	}
	if xc := os.Getenv("XDG_CONFIG_HOME"); xc != "" && filepath.IsAbs(xc) {
		controls = append(controls, filepath.Join(xc, "git", "config"))
	}
	g.search = compileSearchPath(os.Getenv("PATH"))
	cm, err := compileControls(g.home, controls)
	if err != nil {
		g.err = err
		return g
	}
	g.controls = cm
	return g
}

// forms returns the cleaned absolute form of p and, when it differs, its
// resolved form. A path that cannot be resolved keeps its literal form.
func (g *Guard) forms(p string) []string {
	abs, err := Absolute(g.home, "/", p)
	if err != nil {
		return nil
	}
	out := []string{filepath.Clean(abs)}
	if r, err := resolveAbs(abs); err == nil && r != out[0] {
		out = append(out, r)
	}
	return out
}

// Name implements guard.Guard.
func (g *Guard) Name() string { return "paths" }

func within(dirs []string, p string) bool {
	for _, d := range dirs {
		if action.Within(d, p) {
			return true
		}
	}
	return false
}

func isFileKind(k action.Kind) bool {
	switch k {
	case action.KindFileRead, action.KindFileWrite, action.KindFileEdit, action.KindFileDelete:
		return true
	}
	return false
}

// resolvedPath is one path fact after resolution.
type resolvedPath struct {
	fact    action.PathFact
	literal string // absolute, cleaned, before symlinks (empty if unknown)
	err     error
}

// Check implements guard.Guard. It replaces a.Facts.Paths with the
// resolved paths.
func (g *Guard) Check(ctx context.Context, a *action.Action) ([]guard.Finding, error) {
	fs, err := g.checkNow(ctx, a)
	if err != nil {
		return nil, err
	}
	return append(fs, g.laterFindings(a)...), nil
}

// laterFindings judges the paths of commands the action plants for a later
// program to run (Facts.Later: a skill's !`command`, an install script):
// they run outside Overseer's view, so what must never happen there —
// Overseer's own state, a control file, a catastrophic deletion — is
// blocked now, and a secret they would read reaches a person now.
func (g *Guard) laterFindings(a *action.Action) []guard.Finding {
	if len(a.Facts.Later) == 0 || g.err != nil {
		return nil
	}
	b := *a
	b.Facts.Paths = a.Facts.Later
	var fs []guard.Finding
	for _, rp := range g.resolveAll(&b, resolveDir(a.Cwd)) {
		p := rp.fact
		if rp.err != nil {
			continue // judged where it runs; a path that cannot be placed now says nothing more
		}
		what := fmt.Sprintf("a command this action plants for a later program would %s %s, outside Overseer's view", verb(p.Intent), p.Path)
		switch {
		case within(g.protected, p.Path) || rp.literal != "" && within(g.protected, rp.literal):
			fs = append(fs, guard.Finding{Check: "paths.self-protection", Level: action.Block, Hard: true,
				Message: what + ": it is part of Overseer's own state"})
			continue
		case p.Intent == action.PathDelete && g.catastrophic(p.Path):
			fs = append(fs, guard.Finding{Check: "paths.catastrophic-delete", Level: action.Block, Hard: true,
				Message: what + ": that would destroy the system or the home directory"})
			continue
		}
		if msg, ok := g.controlFinding(p, rp.literal); ok {
			fs = append(fs, guard.Finding{Check: "paths.control-file", Level: action.Block, Hard: true,
				Message: "a command this action plants for a later program: " + msg})
			continue
		}
		if by, ok := g.secret(p.Path, rp.literal); ok {
			fs = append(fs, guard.Finding{Check: "paths.secret", Level: action.Approve, Hard: true,
				Message: fmt.Sprintf("%s: it is a secret (matches %q), and a person must see that now", what, by)})
		}
	}
	return fs
}

// checkNow judges the paths the action touches now.
func (g *Guard) checkNow(ctx context.Context, a *action.Action) ([]guard.Finding, error) {
	if g.err != nil {
		return nil, fmt.Errorf("paths guard misconfigured: %w", g.err)
	}
	action.DeriveFileFacts(a)
	fileKind := isFileKind(a.Kind)
	if fileKind && len(a.Facts.Paths) == 0 {
		return []guard.Finding{{
			Check: "paths.no-path", Level: g.softWrite(a.Kind), Hard: false,
			Message: fmt.Sprintf("the %s call names no file path Overseer can see, so it cannot tell which files it touches", a.Tool),
		}}, nil
	}
	if len(a.Facts.Paths) == 0 {
		return nil, nil
	}
	wd := resolveDir(a.Cwd)
	cwd := ""
	if wd.ok {
		cwd = wd.dest
	}
	rps := g.resolveAll(a, wd)
	a.Facts.Paths = a.Facts.Paths[:0]
	for _, rp := range rps {
		a.Facts.Paths = append(a.Facts.Paths, rp.fact)
	}

	var fs []guard.Finding
	allSandboxed, anyWrite, scratch := true, false, false
	for _, rp := range rps {
		p := rp.fact
		if rp.err != nil {
			fs = append(fs, g.resolveFinding(p, rp.err))
			continue
		}
		if within(g.protected, p.Path) || (rp.literal != "" && within(g.protected, rp.literal)) {
			via := ""
			if rp.literal != "" && rp.literal != p.Path {
				via = fmt.Sprintf(" (reached through %s)", rp.literal)
			}
			fs = append(fs, guard.Finding{Check: "paths.self-protection", Level: action.Block, Hard: true,
				Message: fmt.Sprintf("%s%s is part of Overseer's own state; agents may not %s it", p.Path, via, verb(p.Intent))})
			continue
		}
		if p.Below && p.Intent == action.PathRead {
			// A search of the text of every file below p.Path (Grep):
			// Overseer's home and the secret locations below it are read.
			if ovh, ok := g.protectedBelow(p.Path); ok {
				fs = append(fs, guard.Finding{Check: "paths.self-protection", Level: action.Block, Hard: true,
					Message: fmt.Sprintf("%s holds %s, part of Overseer's own state; a search of the files below it reads it", p.Path, ovh)})
				continue
			}
			for _, s := range g.secretsBelow(p.Path) {
				fs = append(fs, guard.Finding{Check: "paths.secret", Level: action.Approve, Hard: true,
					Message: fmt.Sprintf("%s holds %s, a secret; a search of the files below it reads it, and a person must see that", p.Path, s)})
			}
		}
		if p.Intent == action.PathDelete && g.catastrophic(p.Path) {
			fs = append(fs, guard.Finding{Check: "paths.catastrophic-delete", Level: action.Block, Hard: true,
				Message: fmt.Sprintf("deleting %s would destroy the system or the home directory", p.Path)})
		}
		if msg, ok := g.controlFinding(p, rp.literal); ok {
			fs = append(fs, guard.Finding{Check: "paths.control-file", Level: action.Block, Hard: true, Message: msg})
		} else if msg, ok := g.shadowFinding(p, rp.literal); ok {
			fs = append(fs, guard.Finding{Check: "paths.path-shadow", Level: action.Approve, Hard: true, Message: msg})
		}
		if by, ok := g.secret(p.Path, rp.literal); ok && g.newFromTemplate(p, rp.literal) {
			fs = append(fs, guard.Finding{Check: "paths.secret-template", Level: action.Notify,
				Message: fmt.Sprintf("%s is created as a copy of %s, a template git tracks (matches %q)", p.Path, p.Template, by)})
		} else if ok {
			fs = append(fs, guard.Finding{Check: "paths.secret", Level: action.Approve, Hard: true,
				Message: fmt.Sprintf("%s is a secret (matches %q); a person must see this %s", p.Path, by, access(p.Intent))})
		}
		if a.Kind == action.KindFileRead && p.Intent == action.PathRead && !g.readableFor(p.Path, cwd) && !g.created(ctx, a, p.Path) {
			fs = append(fs, guard.Finding{Check: "paths.outside-readable", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("%s is outside the readable paths (%s)", p.Path, g.readableSummary(cwd))})
		}
		if fileKind && (p.Intent == action.PathWrite || p.Intent == action.PathDelete) {
			anyWrite = true
			inOut := within(g.output, p.Path)
			if !inOut && !p.InCwd && p.Intent == action.PathWrite && g.created(ctx, a, p.Path) {
				inOut, scratch = true, true
			}
			inCwd := p.InCwd
			if !inOut && !inCwd {
				allSandboxed = false
				fs = append(fs, guard.Finding{Check: "paths.outside-sandbox", Level: g.softWrite(a.Kind), Hard: false,
					Message: fmt.Sprintf("%s is outside the working directory and the output directory", p.Path)})
			} else if !inOut || p.Intent == action.PathDelete || inGit(p.Path) {
				allSandboxed = false
			}
		}
	}
	if fileKind && anyWrite && allSandboxed && (len(g.output) > 0 || scratch) {
		msg := "writes inside the output directory"
		if scratch {
			msg = "writes inside the output directory or a directory this session created"
		}
		fs = append(fs, guard.Finding{Check: "paths.output-dir", Level: action.Notify, Hard: false, Message: msg})
	}
	if a.Kind == action.KindFileEdit {
		fs = append(fs, g.readBeforeEdit(ctx, a)...)
	}
	return fs, nil
}

// created reports whether the action's session created p (or a directory
// that holds it). Failures count as not created.
func (g *Guard) created(ctx context.Context, a *action.Action, p string) bool {
	if g.cfg.Created == nil {
		return false
	}
	c, err := g.cfg.Created.CreatedBy(ctx, a, []string{p})
	return err == nil && len(c) == 1 && c[0]
}

// inGit reports whether p is inside a .git directory (hooks there run code).
func inGit(p string) bool {
	return strings.Contains(p+"/", "/.git/")
}

// softWrite is the guard's soft level for a write or delete it cannot place
// in the sandbox: confirm (approve for deletes), never below the policy's
// default for the kind.
func (g *Guard) softWrite(k action.Kind) action.Level {
	l := action.Confirm
	if k == action.KindFileDelete {
		l = action.Approve
	}
	if g.cfg.Default != nil {
		l = action.Max(l, g.cfg.Default(k))
	}
	return l
}

func (g *Guard) resolveFinding(p action.PathFact, err error) guard.Finding {
	if errors.Is(err, ErrSymlinkLoop) {
		return guard.Finding{Check: "paths.symlink-loop", Level: action.Block, Hard: true,
			Message: fmt.Sprintf("%s cannot be used: its symbolic links form a loop (%v)", p.Path, err)}
	}
	return guard.Finding{Check: "paths.unresolved", Level: action.Approve, Hard: true,
		Message: fmt.Sprintf("cannot tell where %s leads (%v), so a person must decide", p.Path, err)}
}

// resolveAll resolves every path fact. For file kinds it goes back to the
// raw argument, because the naive fact has already folded ".." lexically,
// which is wrong after a symbolic link.
func (g *Guard) resolveAll(a *action.Action, wd resolvedDir) []resolvedPath {
	cwd := ""
	if wd.ok {
		cwd = wd.dest
	}
	var out []resolvedPath
	seen := map[action.PathFact]bool{}
	add := func(rp resolvedPath) {
		if rp.err == nil && seen[rp.fact] {
			return
		}
		seen[rp.fact] = true
		out = append(out, rp)
	}
	for _, f := range a.Facts.Paths {
		raws := rawArgsFor(a, f.Path)
		if len(raws) == 0 {
			raws = []string{f.Path}
		}
		for _, raw := range raws {
			rp := resolvedPath{fact: f}
			abs, err := Absolute(g.home, a.Cwd, raw)
			if err != nil {
				rp.err = err
				add(rp)
				continue
			}
			abs = selfCwd(abs, a.Cwd)
			rp.literal = filepath.Clean(abs)
			res, err := wd.resolve(abs)
			if errors.Is(err, ErrSymlinkLoop) && f.Intent == action.PathDelete {
				// Deleting a link removes the link, not what it points to: a
				// looping link may be cleaned up, judged where it lies.
				if dir, derr := resolveAbs(filepath.Dir(rp.literal)); derr == nil {
					res, err = filepath.Join(dir, filepath.Base(rp.literal)), nil
				}
			}
			if err != nil {
				rp.err = err
				rp.fact.Path = rp.literal
				add(rp)
				continue
			}
			rp.fact.Path = res
			rp.fact.InCwd = cwd != "" && action.Within(cwd, res)
			add(rp)
		}
	}
	return out
}

// rawArgsFor returns the string arguments of a whose naive resolution is
// fact: the path as the agent wrote it.
// protectedBelow returns a protected path (Overseer's home, a protected
// file) strictly below dir.
func (g *Guard) protectedBelow(dir string) (string, bool) {
	for _, pr := range g.protected {
		if pr != dir && action.Within(dir, pr) {
			return pr, true
		}
	}
	return "", false
}

// secretsBelow returns the secret locations named by absolute patterns
// without wildcards (~/.ssh, ~/.aws …) strictly below dir that exist.
func (g *Guard) secretsBelow(dir string) []string {
	if g.secrets == nil {
		return nil
	}
	var out []string
	ldir := strings.ToLower(dir)
	for _, r := range g.secrets.rules {
		if r.negate || !r.isPath || r.shape != shapeExact || r.pattern == ldir || !action.Within(ldir, r.pattern) {
			continue
		}
		if _, err := os.Lstat(r.pattern); err != nil && !strings.EqualFold(r.pattern, ldir) {
			if _, err := os.Lstat(filepath.Join(dir, strings.TrimPrefix(r.pattern, ldir))); err != nil {
				continue
			}
		}
		out = append(out, r.pattern)
		if len(out) == 8 {
			break
		}
	}
	return out
}

// selfCwd reads /proc/self/cwd (and /proc/thread-self/cwd) as the agent's
// process does: its working directory. The judging process's own is
// another directory (the daemon's), where /proc/self/cwd/../home/…
// resolved to a path that holds nothing.
func selfCwd(abs, cwd string) string {
	for _, pre := range []string{"/proc/self/cwd", "/proc/thread-self/cwd"} {
		if rest, ok := strings.CutPrefix(abs, pre); ok && (rest == "" || rest[0] == '/') {
			if cwd == "" || !filepath.IsAbs(cwd) {
				return abs
			}
			return cwd + rest
		}
	}
	return abs
}

func rawArgsFor(a *action.Action, fact string) []string {
	var out []string
	for _, v := range a.Args {
		s, ok := v.(string)
		if !ok || s == "" {
			continue
		}
		if len(s) <= 4096 && action.ResolvePath(a.Cwd, s) == fact {
			out = append(out, s)
			continue
		}
		// A path a patch names (Codex's apply_patch): as written, so that
		// ".." after a link is resolved where the kernel takes it
		// (link/../.gitconfig, link -> ~/.ssh, is ~/.gitconfig).
		if strings.Contains(s, "*** Begin Patch") {
			for _, t := range action.ParsePatchTargets(s) {
				if strings.Contains(t.Path, "..") && action.ResolvePath(a.Cwd, t.Path) == fact {
					out = append(out, t.Path)
				}
			}
		}
	}
	return out
}

// Secret reports whether a resolved path is one of the guard's secrets,
// and the pattern that makes it one. Other guards (egress) use it to know
// which reads were reads of secrets.
func (g *Guard) Secret(path string) (string, bool) {
	if g == nil || g.secrets == nil {
		return "", false
	}
	return g.secrets.match(path)
}

func (g *Guard) secret(resolved, literal string) (string, bool) {
	if by, ok := g.secrets.match(resolved); ok {
		return by, true
	}
	if literal != "" && literal != resolved {
		return g.secrets.match(literal)
	}
	return "", false
}

func (g *Guard) readableFor(p, cwd string) bool {
	if g.publicKey(p) {
		return true
	}
	if len(g.cfg.ReadablePaths) == 0 {
		return (cwd != "" && action.Within(cwd, p)) || within(g.output, p)
	}
	for _, r := range g.readable {
		if r.rel == "" {
			if within(r.abs, p) {
				return true
			}
			continue
		}
		if cwd == "" {
			continue
		}
		d, err := resolveAbs(filepath.Join(cwd, r.rel))
		if err == nil && action.Within(d, p) {
			return true
		}
	}
	return false
}

// publicKey reports whether p (resolved: a link named *.pub that leads to a
// private key is judged as the key) is a public key in ~/.ssh, which anyone
// may read.
func (g *Guard) publicKey(p string) bool {
	return g.home != "" && filepath.Dir(p) == filepath.Join(g.home, ".ssh") &&
		strings.HasSuffix(p, ".pub") && len(filepath.Base(p)) > len(".pub")
}

func (g *Guard) readableSummary(cwd string) string {
	if len(g.cfg.ReadablePaths) == 0 {
		parts := []string{}
		if cwd != "" {
			parts = append(parts, "the working directory "+cwd)
		} else {
			parts = append(parts, "no working directory given")
		}
		if g.cfg.OutputDir != "" {
			parts = append(parts, "the output directory "+g.cfg.OutputDir)
		}
		return strings.Join(parts, ", ")
	}
	return strings.Join(g.cfg.ReadablePaths, ", ")
}

// readBeforeEdit checks that the session has read, in full, the current
// content of every file the edit changes.
func (g *Guard) readBeforeEdit(ctx context.Context, a *action.Action) []guard.Finding {
	builtin := a.Agent == BuiltinAgent && a.Tool == BuiltinEditTool
	level := action.Confirm
	if builtin {
		level = action.Block
	}
	var fs []guard.Finding
	refuse := func(msg string) {
		fs = append(fs, guard.Finding{Check: "paths.read-before-edit", Level: level, Hard: true, Message: msg})
	}
	for _, p := range a.Facts.Paths {
		if p.Intent != action.PathWrite {
			continue
		}
		fi, err := os.Stat(p.Path)
		if errors.Is(err, os.ErrNotExist) {
			continue // nothing to be outdated; the edit tool reports the missing file
		}
		if err != nil {
			refuse(fmt.Sprintf("cannot examine %s (%v), so the edit cannot be checked against what you read", p.Path, err))
			continue
		}
		if fi.IsDir() {
			continue
		}
		if g.cfg.Reads == nil {
			if builtin || g.cfg.StrictForeignEdits {
				refuse(fmt.Sprintf("%s has not been read in this session: read the file first (in full), then edit it", p.Path))
			}
			continue
		}
		ri, ok, err := g.cfg.Reads.LastRead(ctx, a.Session, p.Path)
		switch {
		case err != nil:
			refuse(fmt.Sprintf("cannot tell whether %s was read in this session (%v); read the file again, then edit it", p.Path, err))
		case !ok:
			if builtin || g.cfg.StrictForeignEdits {
				refuse(fmt.Sprintf("%s has not been read in this session: read the file first (in full), then edit it", p.Path))
			}
		case !ri.Full && (builtin || g.cfg.StrictForeignEdits):
			// Another agent's edit after a partial read is judged as one
			// after a full read (unless strict): its tool replaces text it
			// quotes exactly (Claude Code's Edit, Gemini's replace, a
			// patch's context), and it reads large files in parts; what the
			// read tells is whether the file changed since (the whole file
			// was hashed).
			refuse(fmt.Sprintf("%s was only partly read (offset/limit): read the whole file first, then edit it", p.Path))
		case !fi.ModTime().Equal(ri.Mtime) && fi.Size() > MaxRecordedRead:
			// No read of a file this large is remembered: it changed since
			// (and is not hashed, which would hold the judgement).
			refuse(fmt.Sprintf("%s is larger than %d bytes now, so the edit cannot be checked against what you read", p.Path, MaxRecordedRead))
		case !fi.ModTime().Equal(ri.Mtime):
			h, _, err := HashFile(p.Path)
			if err != nil {
				refuse(fmt.Sprintf("cannot hash %s (%v); read the file again, then edit it", p.Path, err))
			} else if h != ri.Hash {
				// A stale read: the file changed behind the agent's back
				// (another program, person or session). Whoever the agent,
				// the edit is refused until it reads the file again — a
				// person's yes would not tell the agent what changed.
				fs = append(fs, guard.Finding{Check: "paths.read-before-edit", Level: action.Block, Hard: true,
					Message: fmt.Sprintf("%s changed since you read it (at %s): read it again, then edit it",
						p.Path, ri.At.UTC().Format(time.RFC3339))})
			}
			// Same bytes, new time (a sync tool or a checkout touched it): fine.
		}
	}
	return fs
}

// catastrophic reports whether deleting p destroys the system or the
// user's home: the root, a top-level directory, or the home directory.
func (g *Guard) catastrophic(p string) bool {
	p = filepath.Clean(p)
	if p == "/" || g.home != "" && p == g.home {
		return true
	}
	return filepath.IsAbs(p) && strings.Count(p, "/") == 1
}

// newFromTemplate reports whether the write p only creates a secret file of
// the working tree as a copy of its template (cp .env.example .env, as the
// shell guard marked it): the file does not exist yet, neither it nor the
// template is reached through a link, the template is a regular file beside
// it that is not a secret itself. An existing file (whose secrets the copy
// would destroy), one outside the working tree and any other write still
// go to a person.
func (g *Guard) newFromTemplate(p action.PathFact, literal string) bool {
	if p.Intent != action.PathWrite || p.Template == "" || !p.InCwd || (literal != "" && literal != p.Path) ||
		!action.EnvTemplate(p.Template, p.Path) {
		return false
	}
	if _, err := os.Lstat(p.Path); !errors.Is(err, os.ErrNotExist) {
		return false
	}
	if dir, err := resolveAbs(filepath.Dir(p.Path)); err != nil || dir != filepath.Dir(p.Path) {
		return false
	}
	st, err := os.Lstat(p.Template)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	_, secret := g.secret(p.Template, "")
	return !secret
}
