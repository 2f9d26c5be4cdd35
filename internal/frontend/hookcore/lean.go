package hookcore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/secrets"
)

// The lean hook (cmd/overseer-hook) answers the common case of a hook call
// itself: a pre-call event while a daemon runs. It reads the event, asks
// the daemon, keeps the previous content of the files the call changes
// through the daemon, and prints the agent's answer — without the judging
// code of the full binary, whose package initialisation and page faults
// are most of a hook's start-up. Every other case it hands to the full
// `overseer hook` (the binary next to it) with the same arguments and the
// same event on standard input: no daemon named or one that cannot be
// connected to (nothing was sent, so nothing was decided), a post-call
// event (its result scan follows the policy), a configuration or command
// line it does not take as is. A daemon that answers wrongly, stops
// answering or times out is never handed on: the call is denied.

// FullName is the file name of the full binary the lean hook hands calls
// to; it sits in the lean hook's own directory.
const FullName = "overseer"

// LeanName is the file name of the lean hook entry, next to the full
// binary.
const LeanName = "overseer-hook"

// Lean runs one hook call of the lean entry.
type Lean struct {
	// Args are the command line after the program name, as `overseer
	// init` writes it: [--home DIR] [--policy FILE] hook AGENT
	// [--max-wait D] [--confirm hold|ask].
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Environ is the agent's environment, whose secret-looking values are
	// fingerprinted for the daemon (nil: none are).
	Environ func() []string
	// Fingerprint fingerprints environ's secret values with home's key
	// (egress.EnvFingerprints); nil sends none.
	Fingerprint func(home string, environ []string) []secrets.ValueFP
	// Handoff runs the full hook with args and, when event is not nil,
	// event as its standard input (else this process's own, unread), in
	// place of this process. It returns only when it could not; the call
	// is then denied.
	Handoff func(args []string, event []byte) error
	// Deadline bounds the whole call (it is denied when it passes); zero
	// means the max wait plus DeadlineMargin, as in the full hook.
	Deadline time.Duration
}

// leanArgs is the command line the lean hook takes as is.
type leanArgs struct {
	home, agent        string
	maxWait            time.Duration
	maxWaitSet         bool
	confirm            ConfirmMode
	confirmSet, policy bool
}

// parseLeanArgs reads the command line `overseer init` writes; ok is false
// for anything else (the full hook then reads it, and denies what it does
// not take).
func parseLeanArgs(args []string) (la leanArgs, ok bool) {
	i := 0
	value := func(name string) (string, bool) {
		a := args[i]
		if v, found := strings.CutPrefix(a, name+"="); found {
			return v, true
		}
		if a == name && i+1 < len(args) {
			i++
			return args[i], true
		}
		return "", false
	}
	for ; i < len(args) && args[i] != "hook"; i++ {
		switch {
		case args[i] == "--home" || strings.HasPrefix(args[i], "--home="):
			v, ok := value("--home")
			if !ok || v == "" {
				return la, false
			}
			la.home = v
		case args[i] == "--policy" || strings.HasPrefix(args[i], "--policy="):
			if _, ok := value("--policy"); !ok {
				return la, false
			}
			la.policy = true
		default:
			return la, false
		}
	}
	if i+1 >= len(args) || args[i] != "hook" || !KnownAgent(args[i+1]) {
		return la, false
	}
	la.agent = args[i+1]
	for i += 2; i < len(args); i++ {
		switch {
		case args[i] == "--max-wait" || strings.HasPrefix(args[i], "--max-wait="):
			v, ok := value("--max-wait")
			d, err := time.ParseDuration(v)
			if !ok || err != nil || d <= 0 {
				return la, false
			}
			la.maxWait, la.maxWaitSet = d, true
		case args[i] == "--confirm" || strings.HasPrefix(args[i], "--confirm="):
			v, ok := value("--confirm")
			if m := ConfirmMode(v); !ok || m != ConfirmHold && m != ConfirmAsk {
				return la, false
			}
			la.confirm, la.confirmSet = ConfirmMode(v), true
		default:
			return la, false
		}
	}
	return la, true
}

// home is Overseer's home as the full binary finds it: --home, else
// $OVERSEER_HOME (made absolute), else ~/.overseer.
func (l *Lean) home(la leanArgs) (string, error) {
	if la.home != "" {
		return la.home, nil
	}
	if h := l.Getenv("OVERSEER_HOME"); h != "" {
		return filepath.Abs(h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(u, ".overseer"), nil
}

// errHandOff ends the lean handling of a call: the full hook takes it.
var errHandOff = errors.New("handed to the full hook")

// Run handles the call and returns the exit status (0 or 2), unless it
// hands the call to the full hook, which then takes this process's place.
func (l *Lean) Run(ctx context.Context) int {
	fail := func(msg string) int { return Write(Failure(msg), l.Stdout, l.Stderr) }
	handoff := func(event []byte) int {
		err := l.Handoff(l.Args, event)
		return fail(fmt.Sprintf("the hook could not run the full Overseer (%v), so the call is denied", err))
	}
	la, ok := parseLeanArgs(l.Args)
	if !ok {
		return handoff(nil)
	}
	home, err := l.home(la)
	if err != nil {
		return handoff(nil)
	}
	conn, err := Dial(home)
	if err != nil {
		return handoff(nil) // no daemon: the full hook judges the call in its process
	}
	cfg, err := LoadConfig(home)
	if err != nil {
		return handoff(nil) // the full hook denies every call, saying why
	}
	tools, err := NewTable(cfg.Tools)
	if err != nil {
		return handoff(nil)
	}
	maxWait, confirm := time.Duration(cfg.MaxWait), cfg.Confirm
	if la.maxWaitSet {
		maxWait = la.maxWait
	}
	if la.confirmSet {
		confirm = la.confirm
	}
	if maxWait <= 0 {
		maxWait = DefaultMaxWait
	}
	data, err := io.ReadAll(io.LimitReader(l.Stdin, MaxInput+1))
	if err != nil {
		return fail("could not read the hook event: " + err.Error())
	}
	ev, err := ParseEvent(la.agent, data)
	if err != nil {
		return fail(err.Error() + ", so the call is denied")
	}
	if ev.Phase != PhasePre {
		return handoff(data) // the result scan follows the policy: the full hook's
	}
	limit := l.Deadline
	if limit <= 0 {
		limit = maxWait + DeadlineMargin
	}
	var handedOff atomic.Bool
	code := Serve(ctx, limit, func(ctx context.Context) Response {
		d, err := l.pre(ctx, home, conn, tools, ev, maxWait, confirm == ConfirmAsk && CanAsk(ev.Agent))
		if errors.Is(err, errHandOff) {
			handedOff.Store(true)
			return Response{} // nothing written, exit status 0: see below
		}
		if err != nil {
			return Failure(err.Error() + " — so the call is denied")
		}
		return Render(ev, d)
	}, l.Stdout, l.Stderr)
	// Nothing reached the daemon: the full hook judges the call — unless
	// the deadline or an interruption ended the call first (Serve then
	// wrote a deny, status 2): one call, one answer.
	if code == 0 && handedOff.Load() {
		return handoff(data)
	}
	return code
}

// pre judges a call before it runs, through the daemon; errHandOff means
// the daemon could not be connected to before anything was sent.
func (l *Lean) pre(ctx context.Context, home string, conn *Conn, tools *Table, ev *Event, maxWait time.Duration, askConfirm bool) (Decision, error) {
	a := tools.Action(ev)
	// The model use so far counts before the call is judged, so that a
	// budget cap it reaches refuses this call.
	if err := l.reportUsage(ctx, conn, ev); Unreached(err) {
		return Decision{}, errHandOff
	}
	w := &Waiter{C: conn, Redial: func() (*Conn, error) { return Dial(home) }}
	if l.Fingerprint != nil && l.Environ != nil {
		w.Known = l.Fingerprint(home, l.Environ())
	}
	d, err := w.Decide(ctx, a, maxWait, askConfirm)
	if errors.Is(err, ErrNoDaemon) {
		return Decision{}, errHandOff
	}
	if err != nil || d.Outcome != Allow {
		return d, err
	}
	// Keep what the call will change before letting it run. The facts of a
	// shell command are those the daemon derived while judging it (sent
	// back with its answer); the lean hook has no shell analysis of its own.
	switch {
	case a.Kind == action.KindShell:
		if !w.Analysed {
			return Decision{}, errors.New("could not tell which files the call changes: the daemon sent no analysis of the command")
		}
	case len(a.Facts.Paths) == 0:
		action.DeriveFileFacts(a)
	}
	if HasTargets(a) {
		if err := w.C.Keep(ctx, a.ID); err != nil {
			return Decision{}, fmt.Errorf("could not keep the previous content for `overseer undo`: %w", err)
		}
	}
	if ev.ToolUseID == "" && a.ID != "" {
		Remember(home, ev, a.ID)
	}
	return d, nil
}

// reportUsage reads ev's transcript and reports its use, if there is any to
// report. Only a failure to connect is returned; others are ignored (the
// budget then counts less, as in the full hook).
func (l *Lean) reportUsage(ctx context.Context, c *Conn, ev *Event) error {
	if ev.TranscriptPath == "" || ev.SessionID == "" || (ev.Agent != ClaudeCode && ev.Agent != Codex) {
		return nil
	}
	f, err := OpenTranscript(ev.TranscriptPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	u, err := ReadTranscriptUse(ev.Agent, f)
	if err != nil || u.Input == 0 && u.Output == 0 {
		return nil
	}
	if u.Model == "" {
		u.Model = ev.Model
	}
	return c.ReportUsage(ctx, ev.Agent, ev.SessionID, u)
}

// HasTargets reports whether a writes or deletes a path.
func HasTargets(a *action.Action) bool {
	for _, p := range a.Facts.Paths {
		if p.Intent == action.PathWrite || p.Intent == action.PathDelete {
			return true
		}
	}
	return false
}
