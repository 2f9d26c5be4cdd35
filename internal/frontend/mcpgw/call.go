package mcpgw

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/guard/mcpguard"
	"github.com/overseer-dev/overseer/internal/guard/resultscan"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/mcpshared"
	"github.com/overseer-dev/overseer/internal/store"
)

// ChannelElicitation is the channel recorded for answers a person gave
// through the client's own prompt.
const ChannelElicitation = "mcp-elicitation"

// elicitKey names the gateway's question in an input-required result.
const elicitKey = "overseer_approval"

// MetaKey is the key of the gateway's record in a result's _meta: the
// action's id, its level, the decision and the approval, if any.
const MetaKey = "overseer"

// progressEvery is how often a held call tells a client that asked for
// progress that it is still waiting.
const progressEvery = 5 * time.Second

// protocolMRTR is the first protocol version whose servers ask for input
// inside the result of a call (multi round-trip requests, SEP-2322)
// instead of sending requests of their own.
const protocolMRTR = "2026-07-28"

// decision is what the firewall and the people said about a call: run it
// under actionID, or answer result without running it.
type decision struct {
	actionID string
	level    action.Level
	approval string
	result   *mcp.CallToolResult
}

// call handles one tools/call of tool name.
func (g *Gateway) call(ctx context.Context, name string, req *mcp.CallToolRequest) *mcp.CallToolResult {
	g.calls.Add(1)
	defer g.calls.Done()
	growStack(0)
	g.mu.Lock()
	e := g.tools[name]
	g.mu.Unlock()
	if e == nil {
		return toolError(nil, "Overseer: the tool %s is no longer offered. Nothing was run.", name)
	}
	raw, err := decodeArgs(req.Params.Arguments)
	if err != nil {
		return g.refuse(ctx, e, req, nil, err)
	}
	args, stripped, err := e.schema.check(raw)
	if err != nil {
		return g.refuse(ctx, e, req, raw, err)
	}
	if err := e.shadowed(args); err != nil {
		return g.refuse(ctx, e, req, args, err)
	}
	a := g.buildAction(e, req, args, stripped)
	if _, err := e.up.session(); err != nil {
		return g.notRun(ctx, a, err, "Overseer: %s cannot be called now (%v). Nothing was run; try again later.", name, err)
	}
	d := g.decide(ctx, req, a)
	if d.result != nil {
		return d.result
	}
	return g.forward(ctx, e, req, a, args, stripped, d)
}

// callStack is about the stack a call needs (judging it, SQLite's
// writes): see growStack.
const callStack = 64 << 10

// growStack grows the calling goroutine's stack to callStack at once.
// Every call runs on a new goroutine of the SDK's, whose small stack
// would otherwise be doubled and copied several times as the call goes
// deeper, a tenth of a millisecond of CPU per call; grown here, while
// it holds little, it is copied once and cheaply.
//
// i is 0: an index the compiler cannot know keeps the frame from being
// optimised away.
//
//go:noinline
func growStack(i int) byte {
	var pad [callStack]byte
	pad[i] = 1
	return pad[len(pad)-1-i]
}

// buildAction turns a call into the canonical action the firewall judges.
func (g *Gateway) buildAction(e *toolEntry, req *mcp.CallToolRequest, args map[string]any, stripped []string) *action.Action {
	a := &action.Action{ // its id is minted when it is submitted
		Agent:   g.agent(req),
		Session: g.session(req),
		Tool:    e.name,
		Kind:    e.kind,
		Args:    make(map[string]any, len(args)+1),
		Cwd:     g.cwd,
	}
	if e.up.cfg.Cwd != "" {
		a.Cwd = e.up.cfg.Cwd
	}
	for k, v := range args {
		a.Args[k] = v
	}
	// The guards look for the command, path, URL or SQL under the usual
	// names; a mapped argument with another name is copied there.
	if key := canonicalArg(e.kind); key != "" && e.arg != "" && e.arg != key && !isPathKey(e.kind, e.arg) {
		if v, ok := args[e.arg]; ok {
			if _, clash := a.Args[key]; !clash {
				a.Args[key] = v
			}
		}
	}
	if e.schema.unchecked != "" {
		mcpguard.MarkSchemaUnchecked(a, e.schema.unchecked)
	}
	mcpguard.MarkStripped(a, stripped)
	mcpguard.Annotate(a, e.ann) // last: it seals the final arguments
	return a
}

// shadowed refuses arguments that would hide the mapped argument from the
// guards: the guards read a kind's subject under its usual name (command,
// file_path, url, query), where buildAction copies the mapped argument
// (cmd) — unless the call already has that name. A schema that lets extra
// arguments through would then let an agent send {"cmd": "rm -rf ~",
// "command": "echo"}: "echo" judged, "rm -rf ~" run.
//
// Every name a guard reads the subject under counts (the shell guard reads
// command, then cmd; the SQL guard sql, then query; the network guards
// url, then uri). File paths need no check: every path argument is judged.
func (e *toolEntry) shadowed(args map[string]any) error {
	if e.arg == "" || isPathKey(e.kind, e.arg) {
		return nil
	}
	v, ok := args[e.arg]
	if !ok {
		return nil
	}
	for _, key := range subjectKeys(e.kind) {
		other, clash := args[key]
		if key == e.arg || !clash || reflect.DeepEqual(v, other) {
			continue
		}
		return fmt.Errorf("%w: the argument %q differs from %q, which is what this tool runs and what Overseer judges; "+
			"send %q alone", ErrInvalidArgs, key, e.arg, e.arg)
	}
	return nil
}

// subjectKeys are the names under which the guards read a kind's subject.
func subjectKeys(k action.Kind) []string {
	switch k {
	case action.KindShell:
		return []string{"command", "cmd"}
	case action.KindNetFetch:
		return []string{"url", "uri"}
	case action.KindSQL:
		return []string{"sql", "query"}
	case action.KindFileRead, action.KindFileWrite, action.KindFileEdit, action.KindFileDelete:
		return []string{"file_path"}
	}
	return nil
}

// canonicalArg is where the guards look for a kind's subject.
func canonicalArg(k action.Kind) string {
	switch k {
	case action.KindShell:
		return "command"
	case action.KindFileRead, action.KindFileWrite, action.KindFileEdit, action.KindFileDelete:
		return "file_path"
	case action.KindNetFetch:
		return "url"
	case action.KindSQL:
		return "query"
	}
	return ""
}

// isPathKey reports whether arg is already a name under which the file
// facts are derived.
func isPathKey(k action.Kind, arg string) bool {
	switch k {
	case action.KindFileRead, action.KindFileWrite, action.KindFileEdit, action.KindFileDelete:
		switch arg {
		case "path", "file_path", "filepath", "filename", "file", "notebook_path", "target":
			return true
		}
	}
	return false
}

func (g *Gateway) agent(req *mcp.CallToolRequest) string { return g.clientName(req.ClientInfo()) }

// clientName is the agent name recorded for a client's requests.
func (g *Gateway) clientName(ci *mcp.Implementation) string {
	if g.cfg.Agent != "" {
		return g.cfg.Agent
	}
	if ci != nil && ci.Name != "" {
		return ci.Name
	}
	return "mcp-client"
}

func (g *Gateway) session(req *mcp.CallToolRequest) string { return g.sessionOf(req.Session) }

// sessionOf is the session recorded for a client's requests.
func (g *Gateway) sessionOf(ss *mcp.ServerSession) string {
	if ss != nil {
		if id := ss.ID(); id != "" {
			return id
		}
	}
	return g.instance
}

// decide submits the call, or picks up the answer to an earlier identical
// one (same client and session, tool and arguments), and holds it while a
// person decides.
func (g *Gateway) decide(ctx context.Context, req *mcp.CallToolRequest, a *action.Action) decision {
	hash := a.ArgsHash()
	key := callKey(a.Agent, a.Session, a.Tool, hash)
	if st := req.Params.RequestState; st != "" {
		if id, ok := g.openState(st, hash); ok {
			return g.resume(ctx, req, a, id)
		}
		// A state not sealed here for this call is ignored: the call is
		// judged afresh.
	}
	if id, ok := g.recent.get(key); ok {
		if d, done := g.retry(ctx, req, a, key, id); done {
			return d
		}
	}
	sub, err := g.k.SubmitBy(ctx, a, g.askerOf(req))
	if err != nil {
		return decision{result: toolError(nil, "Overseer could not record this call, so it was not run: %v", err)}
	}
	v := sub.Verdict
	switch {
	case v.Level == action.Block:
		return decision{result: g.blocked(a, v)}
	case v.Level.RunsWithoutPerson():
		return decision{actionID: a.ID, level: v.Level}
	case v.Level.NeedsPerson() && sub.Approval != nil:
		g.recent.put(key, sub.Approval.ID)
		return g.hold(ctx, req, a, sub.Approval)
	}
	return decision{result: toolError(meta(a.ID, v.Level, "deny", ""),
		"Overseer: this call needs a person, but no approval could be opened. It was not run.")}
}

// retry handles an identical call while an earlier one's approval is
// known: wait on it while pending, run on an approval (once, within the
// retry window), report a denial once. done is false when the call must be
// judged afresh: the approval was withdrawn, used, or answered too long ago.
func (g *Gateway) retry(ctx context.Context, req *mcp.CallToolRequest, a *action.Action, key, id string) (decision, bool) {
	apr, err := g.k.Gate.Get(ctx, id)
	if err != nil {
		g.recent.drop(key)
		return decision{}, false
	}
	if apr.Status == store.StatusPending {
		return g.hold(ctx, req, a, apr), true
	}
	g.recent.drop(key)
	switch {
	case apr.Status == store.StatusWithdrawn || apr.Answer == nil ||
		g.clk.Now().Sub(apr.Answer.At) > g.k.Gate.Config().RetryWindow:
		return decision{}, false
	case gate.Allowed(apr):
		if err := g.k.Gate.Consume(ctx, apr.ID); err != nil {
			return decision{}, false // already used: a new call
		}
		return decision{actionID: apr.ActionID, level: apr.Level, approval: apr.ID}, true
	default:
		return decision{result: g.denied(apr)}, true
	}
}

// hold waits for a person's answer to apr: through the client's own
// prompt where it supports elicitation and the level allows it, else for
// the configured hold, then answers "pending".
func (g *Gateway) hold(ctx context.Context, req *mcp.CallToolRequest, a *action.Action, apr *store.Approval) decision {
	if maxL := g.cfg.elicitMax(); maxL.Valid() && apr.Level <= maxL && canElicit(req) {
		if req.ProtocolVersion() >= protocolMRTR {
			return decision{result: &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{elicitKey: g.elicitParams(a, apr)},
				RequestState:  g.sealState(apr.ID, apr.ArgsHash),
			}}
		}
		return g.elicitLegacy(ctx, req, a, apr)
	}
	return g.waitHold(ctx, req, apr, g.cfg.Hold.Get(DefaultHold))
}

func canElicit(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	// Form mode: declared, or implied by an empty capability.
	return caps.Elicitation.Form != nil || caps.Elicitation.URL == nil
}

// waitHold waits up to d for apr's answer.
func (g *Gateway) waitHold(ctx context.Context, req *mcp.CallToolRequest, apr *store.Approval, d time.Duration) decision {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := g.waitAsync(wctx, apr.ID)
	timeout := g.clk.After(d)
	ticks := 0
	for {
		var tick <-chan time.Time
		if req.Params.GetProgressToken() != nil {
			tick = g.clk.After(progressEvery)
		}
		select {
		case r := <-ch:
			return g.outcome(ctx, apr, r)
		case <-timeout:
			cancel()
			return g.outcome(ctx, apr, <-ch)
		case <-tick:
			ticks++
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: float64(ticks),
				Message: fmt.Sprintf("waiting for a person to answer approval %s (%s)", apr.ID, apr.Level)})
		}
	}
}

// waitResult is the gate's answer to a wait.
type waitResult struct {
	apr *store.Approval
	err error
}

// waitAsync waits for an approval in a goroutine owned by the caller: it
// ends when ctx ends or the approval is answered, and its one result is
// always delivered (the caller must receive it, since a wait that returns
// an approved approval has consumed it).
func (g *Gateway) waitAsync(ctx context.Context, id string) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		apr, err := g.k.Wait(ctx, id)
		ch <- waitResult{apr, err}
	}()
	return ch
}

// outcome turns the result of a wait into a decision. A wait that ended
// without an answer (the hold ran out) is "pending".
func (g *Gateway) outcome(ctx context.Context, pending *store.Approval, r waitResult) decision {
	switch {
	case r.err == nil && r.apr != nil && r.apr.Status.Terminal():
		g.recent.drop(keyOf(r.apr))
		if gate.Allowed(r.apr) {
			return decision{actionID: r.apr.ActionID, level: r.apr.Level, approval: r.apr.ID}
		}
		return decision{result: g.denied(r.apr)}
	case r.err == nil, errors.Is(r.err, context.Canceled) && ctx.Err() == nil:
		return decision{result: g.pending(pending)}
	case ctx.Err() != nil:
		g.abandoned(ctx, pending)
	case errors.Is(r.err, gate.ErrConsumed):
		g.recent.drop(keyOf(pending))
		return decision{result: toolError(meta(pending.ActionID, pending.Level, "deny", pending.ID),
			"Overseer: approval %s was already used by another identical call; this one was not run. Retry it to ask again.", pending.ID)}
	}
	return decision{result: toolError(meta(pending.ActionID, pending.Level, "deny", pending.ID),
		"Overseer could not learn the answer to approval %s, so the call was not run: %v", pending.ID, r.err)}
}

// elicitLegacy asks the person through the client (a server-initiated
// elicitation, for clients before multi round-trip requests) while any
// other channel may answer too; the first answer wins.
func (g *Gateway) elicitLegacy(ctx context.Context, req *mcp.CallToolRequest, a *action.Action, apr *store.Approval) decision {
	ectx, ecancel := context.WithCancel(ctx)
	defer ecancel()
	type elicited struct {
		res *mcp.ElicitResult
		err error
	}
	ech := make(chan elicited, 1)
	go func() { // owned here: ends with ectx at the latest
		r, err := req.Session.Elicit(ectx, g.elicitParams(a, apr))
		ech <- elicited{r, err}
	}()
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	wch := g.waitAsync(wctx, apr.ID)
	timeout := g.clk.After(g.cfg.ElicitationHold.Get(DefaultElicitationHold))
	select {
	case e := <-ech:
		if e.err != nil || !g.recordElicit(ctx, req, apr.ID, e.res) {
			// Dismissed or failed: the approval stays open for the other
			// channels.
			wcancel()
		}
		return g.outcome(ctx, apr, <-wch)
	case r := <-wch:
		ecancel()
		<-ech
		return g.outcome(ctx, apr, r)
	case <-timeout:
		ecancel()
		wcancel()
		<-ech
		return g.outcome(ctx, apr, <-wch)
	}
}

// resume handles the retry of a call after the client asked the person
// (multi round-trip requests): it records their answer and acts on the
// approval's outcome.
func (g *Gateway) resume(ctx context.Context, req *mcp.CallToolRequest, a *action.Action, id string) decision {
	if er, ok := req.Params.InputResponses[elicitKey].(*mcp.ElicitResult); ok {
		g.recordElicit(ctx, req, id, er)
	}
	apr, err := g.k.Gate.Get(ctx, id)
	if err != nil {
		return decision{result: toolError(nil, "Overseer could not find approval %s, so the call was not run: %v", id, err)}
	}
	if apr.Status == store.StatusPending {
		// The person dismissed the prompt: other channels may still answer.
		g.recent.put(keyOf(apr), apr.ID)
		return g.waitHold(ctx, req, apr, g.cfg.Hold.Get(DefaultHold))
	}
	done, err := g.k.Wait(ctx, id)
	return g.outcome(ctx, apr, waitResult{done, err})
}

// elicitParams is the question put to the person through the client.
func (g *Gateway) elicitParams(a *action.Action, apr *store.Approval) *mcp.ElicitParams {
	var b strings.Builder
	fmt.Fprintf(&b, "Overseer: %s wants to call %s (level %s).\n", a.Agent, a.Tool, apr.Level)
	if d := apr.Verdict.Decider; d != nil && d.Message != "" {
		fmt.Fprintf(&b, "Why it asks: %s\n", d.Message)
	}
	if p := apr.Verdict.Preview; p != nil {
		b.WriteString(p.Summary)
		b.WriteString("\n")
		for _, it := range p.Items {
			fmt.Fprintf(&b, "  - %s\n", it)
		}
		if p.Diff != "" {
			b.WriteString(p.Diff)
			b.WriteString("\n")
		}
	} else if args, err := json.MarshalIndent(a.Args, "", "  "); err == nil {
		fmt.Fprintf(&b, "Arguments:\n%s\n", truncate(string(args), 4000))
	}
	fmt.Fprintf(&b, "Approval %s. Approve this call?", apr.ID)
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: b.String(),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Approve this call", "default": false},
				"reason":  map[string]any{"type": "string", "title": "Reason (shown to the agent)"},
			},
			"required": []string{"approve"},
		},
	}
}

// recordElicit records the person's answer given through the client. It
// reports whether there was an answer (a dismissed prompt is none).
func (g *Gateway) recordElicit(ctx context.Context, req *mcp.CallToolRequest, id string, res *mcp.ElicitResult) bool {
	if res == nil {
		return false
	}
	reason, _ := res.Content["reason"].(string)
	var decisionName string
	switch res.Action {
	case "accept":
		decisionName = gate.DecisionDeny
		if ok, _ := res.Content["approve"].(bool); ok {
			decisionName = gate.DecisionApprove
		}
	case "decline":
		decisionName = gate.DecisionDeny
	default:
		return false
	}
	who := "mcp-client"
	if ci := req.ClientInfo(); ci != nil && ci.Name != "" {
		who = "person at " + ci.Name
	}
	if _, _, err := g.k.Answer(ctx, id, store.Answer{Decision: decisionName, Who: who, Channel: ChannelElicitation,
		Reason: truncate(reason, 2000)}); err != nil {
		g.logf("recording the answer to %s: %v", id, err)
	}
	return true
}

// sealState is the request state of an input-required result: the
// approval's id, bound to the call's arguments and sealed with this
// gateway's key, so a client cannot point a retry at another approval.
func (g *Gateway) sealState(id, argsHash string) string {
	return id + "." + g.stateMAC(id, argsHash)
}

func (g *Gateway) openState(st, argsHash string) (string, bool) {
	id, mac, ok := strings.Cut(st, ".")
	if !ok || id == "" {
		return "", false
	}
	return id, hmac.Equal([]byte(mac), []byte(g.stateMAC(id, argsHash)))
}

func (g *Gateway) stateMAC(id, argsHash string) string {
	m := hmac.New(sha256.New, g.stateKey[:])
	m.Write([]byte(id))
	m.Write([]byte{'\n'})
	m.Write([]byte(argsHash))
	return hex.EncodeToString(m.Sum(nil))
}

// forward runs an allowed call on its upstream and records the result.
func (g *Gateway) forward(ctx context.Context, e *toolEntry, req *mcp.CallToolRequest, a *action.Action,
	args map[string]any, stripped []string, d decision) *mcp.CallToolResult {
	cs, err := e.up.session()
	var res *mcp.CallToolResult
	if err == nil {
		// Upstreams on the newest protocol log only within a request, at
		// the level it carries: the client's, or info.
		level := any("info")
		if l, ok := req.Params.Meta[mcp.MetaKeyLogLevel]; ok {
			level = l
		}
		params := &mcp.CallToolParams{Name: e.orig, Arguments: args, Meta: mcp.Meta{mcp.MetaKeyLogLevel: level}}
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			gt, forget := g.trackProgress(req.Session, tok)
			defer forget()
			params.SetProgressToken(gt)
		}
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if d := e.up.cfg.CallTimeout.Get(DefaultCallTimeout); d > 0 { // "off": the client's call bounds it
			cctx, cancel = context.WithTimeout(ctx, d)
		}
		res, err = cs.CallTool(cctx, params)
		cancel()
	}
	if err != nil {
		res = toolError(nil, "Overseer: the server %s did not complete the call: %v", e.up.name, err)
	}
	if res == nil {
		res = toolError(nil, "Overseer: the server %s returned no result", e.up.name)
	}
	out := mcpshared.Text(res)
	scan := g.k.ScanResult(scanText(out, res))
	r := kernel.Result{ActionID: d.actionID, Agent: a.Agent, Session: a.Session,
		Tool: a.Tool, Output: out, IsError: res.IsError, Scan: &scan, Lazy: true}
	if d.actionID == a.ID {
		// The action judged for this call, facts and all: its record need
		// not be read back (an approved retry runs an earlier action).
		f := a.Facts
		r.Facts = &f
	}
	g.results.record(r)
	if scan.Hit() {
		g.untrusted(res, scan)
	}
	if len(stripped) > 0 {
		res.Content = append(res.Content, &mcp.TextContent{Text: fmt.Sprintf(
			"Overseer: ignored unknown argument(s) %s: they are not in the tool's input schema.", strings.Join(stripped, ", "))})
	}
	m := meta(d.actionID, d.level, "allow", d.approval)
	if len(stripped) > 0 {
		m["stripped_args"] = stripped
	}
	if scan.Hit() {
		m["untrusted"] = scan.Summary()
	}
	setMeta(res, m)
	return res
}

// scanText is everything of a result the model may read, for the scan:
// its text (mcpshared.Text) and, when it has other content too (which
// Text then shows alone), its structured content, which clients may hand
// the model instead.
//
// The structured content's strings are scanned as they are, one a line,
// not as JSON, whose escapes (\n, \u003c) would hide an instruction from
// the detector.
func scanText(out string, res *mcp.CallToolResult) string {
	if res == nil || res.StructuredContent == nil || len(res.Content) == 0 {
		return out
	}
	var v any
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		return out + "\n[structured content that cannot be read]"
	}
	var sb strings.Builder
	sb.WriteString(out)
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			sb.WriteByte('\n')
			sb.WriteString(x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				sb.WriteByte('\n')
				sb.WriteString(k)
				walk(x[k])
			}
		}
	}
	walk(v)
	return sb.String()
}

// untrusted tells the model that a result's content is untrusted: the
// warning is added as the result's last text, and, when the policy says
// so, secrets in its texts and embedded text resources are masked.
func (g *Gateway) untrusted(res *mcp.CallToolResult, scan resultscan.Report) {
	if g.k.Results.Config().MaskSecrets && len(scan.Secrets) > 0 {
		for i, c := range res.Content {
			switch x := c.(type) {
			case *mcp.TextContent:
				cp := *x
				cp.Text = resultscan.Mask(x.Text, g.k.ScanResult(x.Text).Secrets)
				res.Content[i] = &cp
			case *mcp.EmbeddedResource:
				if x.Resource != nil && x.Resource.Text != "" {
					rc := *x.Resource
					rc.Text = resultscan.Mask(rc.Text, g.k.ScanResult(rc.Text).Secrets)
					cp := *x
					cp.Resource = &rc
					res.Content[i] = &cp
				}
			}
		}
		// Structured content could carry the secret too: drop it, the
		// masked text stands for it.
		res.StructuredContent = nil
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: resultscan.Warning(scan)})
}

// refuse answers a call whose arguments are invalid, and records it.
func (g *Gateway) refuse(ctx context.Context, e *toolEntry, req *mcp.CallToolRequest, args map[string]any, err error) *mcp.CallToolResult {
	a := &action.Action{ID: kernel.NewID("act_"), Agent: g.agent(req), Session: g.session(req), Tool: e.name, Kind: e.kind, Args: args}
	return g.notRun(ctx, a, err, "Overseer refused the call: %v. Nothing was run; call %s with arguments that match its input schema.", err, e.name)
}

// notRun records a call that was not run before reaching the firewall,
// and answers it with msg.
func (g *Gateway) notRun(ctx context.Context, a *action.Action, why error, format string, args ...any) *mcp.CallToolResult {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if a.ID == "" {
		a.ID = kernel.NewID("act_")
	}
	stored := a.Bounded(g.k.Engine.Policy().Settings.Limits.StoredBytes) // as every stored action
	if _, err := g.k.Audit.Append(actx, audit.Entry{Type: audit.TypeError, ActionID: a.ID, Agent: stored.Agent,
		Session: stored.Session, Tool: stored.Tool, Data: map[string]any{"error": "not run: " + why.Error(), "action": stored}}); err != nil {
		g.logf("recording a refused call: %v", err)
	}
	return toolError(meta(a.ID, action.Block, "deny", ""), format, args...)
}

func (g *Gateway) blocked(a *action.Action, v action.Verdict) *mcp.CallToolResult {
	msg := fmt.Sprintf("Overseer blocked this call: %s. It was not run and will not be; do not retry it.", v.Summary())
	if len(v.Hints) > 0 {
		msg += "\n" + strings.Join(v.Hints, "\n")
	}
	return toolError(meta(a.ID, v.Level, "deny", ""), "%s", msg)
}

func (g *Gateway) pending(apr *store.Approval) *mcp.CallToolResult {
	why := ""
	if d := apr.Verdict.Decider; d != nil && d.Message != "" {
		why = ": " + d.Message
	}
	return toolError(meta(apr.ActionID, apr.Level, "pending", apr.ID),
		"Overseer: this call is waiting for a person's answer (pending approval %s, level %s%s). Nothing was run yet. "+
			"Ask the user to answer it (for example: overseer approve %s), then retry this exact call with the same "+
			"arguments to pick up the answer.", apr.ID, apr.Level, why, apr.ID)
}

func (g *Gateway) denied(apr *store.Approval) *mcp.CallToolResult {
	m := meta(apr.ActionID, apr.Level, "deny", apr.ID)
	ans := apr.Answer
	if ans == nil {
		return toolError(m, "Overseer: approval %s ended %s. The call was not run.", apr.ID, apr.Status)
	}
	said := ""
	if ans.Reason != "" {
		said = fmt.Sprintf(", saying: %q", ans.Reason)
	}
	switch {
	case apr.Status == store.StatusAborted:
		return toolError(m, "Overseer: %s asked to stop the whole task (via %s)%s. The call was not run. "+
			"Stop what you are doing and wait for the user's instructions.", ans.Who, ans.Channel, said)
	case ans.Who == gate.TimeoutActor:
		return toolError(m, "Overseer: no person answered approval %s in time, so the default (%s) applied. The call was not run.",
			apr.ID, ans.Decision)
	}
	return toolError(m, "Overseer: %s denied this call (via %s)%s. The call was not run; do not retry it unchanged.",
		ans.Who, ans.Channel, said)
}

func meta(actionID string, l action.Level, decisionName, approvalID string) map[string]any {
	m := map[string]any{"decision": decisionName}
	if actionID != "" {
		m["action_id"] = actionID
	}
	if l.Valid() {
		m["level"] = l.String()
	}
	if approvalID != "" {
		m["approval_id"] = approvalID
	}
	return m
}

func setMeta(res *mcp.CallToolResult, m map[string]any) {
	cp := make(mcp.Meta, len(res.Meta)+1)
	for k, v := range res.Meta {
		cp[k] = v
	}
	cp[MetaKey] = m
	res.Meta = cp
}

// toolError is a tool result that tells the model what happened.
func toolError(m map[string]any, format string, args ...any) *mcp.CallToolResult {
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
	if m != nil {
		setMeta(res, m)
	}
	return res
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "… (truncated)"
}

// callKey names a call for its identical retry: the same client (agent)
// and session, the same tool and the same arguments' hash.
func callKey(agent, session, tool, argsHash string) string {
	return agent + "\x00" + session + "\x00" + tool + "\x00" + argsHash
}

func keyOf(apr *store.Approval) string {
	return callKey(apr.Agent, apr.Session, apr.Tool, apr.ArgsHash)
}

// recentCalls remembers, by call (see callKey), the approval opened for a
// call whose outcome the agent has not seen yet, so that the identical
// retried call picks it up.
type recentCalls struct {
	clk  clock.Clock
	keep time.Duration
	mu   sync.Mutex
	m    map[string]recentCall
}

type recentCall struct {
	id string
	at time.Time
}

// newRecentCalls keeps an entry for keep: long enough for an approval to
// be answered (or time out) and its retry window to pass.
func newRecentCalls(clk clock.Clock, keep time.Duration) *recentCalls {
	if keep <= 0 {
		keep = gate.DefaultTimeout + gate.DefaultRetryWindow
	}
	return &recentCalls{clk: clk, keep: keep, m: map[string]recentCall{}}
}

func (r *recentCalls) put(key, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clk.Now()
	for h, c := range r.m {
		if now.Sub(c.at) > r.keep {
			delete(r.m, h)
		}
	}
	r.m[key] = recentCall{id: id, at: now}
}

func (r *recentCalls) get(key string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.m[key]
	return c.id, ok
}

func (r *recentCalls) drop(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, key)
}

// resultQueue records results of calls that ran, off the path of the
// answer to the client: the action and its verdict were recorded durably
// before the call ran; what it returned is recorded by goroutines owned
// by the gateway (resultWriters of them), which drain the queue when the
// gateway closes. A result is a lazy record (kernel.Result.Lazy): it
// waits, briefly, to share the commit of the next call's durable record,
// so that each call costs one commit and one sync rather than two;
// meanwhile the next results are written by the other goroutines.
type resultQueue struct {
	g    *Gateway
	ch   chan kernel.Result
	mu   sync.RWMutex // guards closed and sends on ch
	shut bool
	done chan struct{}
}

// resultBacklog is how many results may wait; beyond it callers record
// their own (backpressure rather than loss).
const resultBacklog = 1024

// resultWriters is how many goroutines write results.
const resultWriters = 16

func newResultQueue(g *Gateway) *resultQueue {
	q := &resultQueue{g: g, ch: make(chan kernel.Result, resultBacklog), done: make(chan struct{})}
	var wg sync.WaitGroup
	for range resultWriters {
		wg.Add(1)
		go func() { defer wg.Done(); q.run() }()
	}
	go func() { wg.Wait(); close(q.done) }()
	return q
}

func (q *resultQueue) run() {
	for r := range q.ch {
		q.write(r)
	}
}

func (q *resultQueue) write(r kernel.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := q.g.k.RecordResult(ctx, r); err != nil {
		q.g.logf("recording the result of %s: %v", r.ActionID, err)
	}
}

// record queues r, or writes it at once when the queue is full or closed.
func (q *resultQueue) record(r kernel.Result) {
	q.mu.RLock()
	if !q.shut {
		select {
		case q.ch <- r:
			q.mu.RUnlock()
			return
		default:
		}
	}
	q.mu.RUnlock()
	q.write(r)
}

// close stops the queue and waits until every queued result is written.
func (q *resultQueue) close() {
	q.mu.Lock()
	if !q.shut {
		q.shut = true
		close(q.ch)
	}
	q.mu.Unlock()
	<-q.done
}
