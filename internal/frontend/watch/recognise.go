package watch

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

//go:embed recognisers.yaml
var builtinData []byte

// Subject styles: how a prompt shows what it asks about.
const (
	styleFenced   = "fenced"
	stylePrefixed = "prefixed"
	styleBoxed    = "boxed"
	stylePatch    = "patch"
	styleTool     = "tool"
	stylePlan     = "plan"
	styleNone     = "none"
)

// Where a plan is drawn (subject.at).
const (
	planFenced = "fenced"
	planUnder  = "under"
	planAbove  = "above"
)

// file is recognisers.yaml, decoded strictly.
type file struct {
	Recognisers []spec `yaml:"recognisers"`
}

type spec struct {
	Name      string   `yaml:"name"`
	Agent     string   `yaml:"agent"`
	Processes []string `yaml:"processes"`
	Frame     string   `yaml:"frame"`
	Bottom    string   `yaml:"bottom"`
	Question  string   `yaml:"question"`
	Menu      *struct {
		Marker    string `yaml:"marker"`
		AllowOnce string `yaml:"allow_once"`
		Deny      string `yaml:"deny"`
		// Hint matches a line the agent draws under the last option (a
		// key hint), skipped.
		Hint string `yaml:"hint"`
	} `yaml:"menu"`
	Never string `yaml:"never"`
	// Scrolled is a line the agent draws under the menu when the prompt is
	// taller than the pane ("↑ 11 more lines"): part of it is not on
	// screen, so it is never read whole.
	Scrolled string `yaml:"scrolled"`
	// Hides says why what this prompt shows may not be what runs (the
	// agent draws commands with control sequences removed instead of
	// refusing them): its prompts are never answered without a person.
	Hides string `yaml:"hides"`
	// Feedback: after a refusal the agent takes text (what to do instead);
	// the reason is typed there.
	Feedback bool `yaml:"feedback"`
	Keys     struct {
		Yes []string `yaml:"yes"`
		No  []string `yaml:"no"`
	} `yaml:"keys"`
	Subject struct {
		Style  string `yaml:"style"`
		Top    string `yaml:"top"`
		Fence  string `yaml:"fence"`
		Prefix string `yaml:"prefix"`
		Intent string `yaml:"intent"`
		Title  string `yaml:"title"`
		// A patch (Codex): the header naming the file and its counts of
		// added and removed lines, the line naming its full path, and
		// lines of the prompt that are neither.
		File        string `yaml:"file"`
		Destination string `yaml:"destination"`
		Skip        string `yaml:"skip"`
		// An MCP tool call: the line naming it, with the groups server,
		// tool and args (a JSON object); the question's groups server and
		// tool, when it has them, must name the same. Without an args
		// group, the arguments are the lines between the question and the
		// menu that match arg (groups name and value), values as text.
		Call string `yaml:"call"`
		Arg  string `yaml:"arg"`
		// A plan: where it is drawn. fenced (the default): between two
		// fences under its title, above the question (Claude Code);
		// under: between the question and the menu (Gemini CLI); above:
		// in the conversation above the question, a block under its
		// title up to a line matching end, after the last line matching
		// turn (the person's last message; Codex).
		At   string `yaml:"at"`
		End  string `yaml:"end"`
		Turn string `yaml:"turn"`
		// Cut is a line the agent draws in the subject in place of lines
		// it hides ("... last 36 lines hidden ..."): the subject is not
		// read.
		Cut string `yaml:"cut"`
	} `yaml:"subject"`
	Tools []toolSpec `yaml:"tools"`
}

type toolSpec struct {
	Title  string `yaml:"title"`
	Tool   string `yaml:"tool"`
	Kind   string `yaml:"kind"`
	Arg    string `yaml:"arg"`
	Detail string `yaml:"detail"`
	Lines  string `yaml:"lines"`
}

// recogniser is a compiled spec.
type recogniser struct {
	spec
	frame, bottom, question   *regexp.Regexp
	allowOnce, deny, never    *regexp.Regexp
	scrolled, call, arg, hint *regexp.Regexp
	top, fence, intent, title *regexp.Regexp
	file, destination, skip   *regexp.Regexp
	end, turn, cut            *regexp.Regexp
	option                    *regexp.Regexp
	tools                     []compiledTool
}

type compiledTool struct {
	toolSpec
	title *regexp.Regexp
}

// Set is a compiled, immutable list of recognisers; the first that
// recognises a screen wins.
type Set struct {
	rs []*recogniser
}

var builtin = sync.OnceValues(func() (*Set, error) { return ParseSet(builtinData) })

// Builtin returns the recognisers shipped with Overseer.
func Builtin() (*Set, error) { return builtin() }

// ErrRecognisers wraps every error in a recogniser file.
var ErrRecognisers = errors.New("recognisers")

// ParseSet decodes (strictly) and compiles a recogniser file.
func ParseSet(data []byte) (*Set, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRecognisers, err)
	}
	s := &Set{}
	names := map[string]bool{}
	for i, sp := range f.Recognisers {
		r, err := compile(sp)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d (%s): %v", ErrRecognisers, i, sp.Name, err)
		}
		if names[sp.Name] {
			return nil, fmt.Errorf("%w: duplicate name %q", ErrRecognisers, sp.Name)
		}
		names[sp.Name] = true
		s.rs = append(s.rs, r)
	}
	return s, nil
}

func compile(sp spec) (*recogniser, error) {
	if sp.Name == "" || sp.Agent == "" || sp.Question == "" {
		return nil, errors.New("name, agent and question are required")
	}
	if len(sp.Keys.Yes) == 0 || len(sp.Keys.No) == 0 {
		return nil, errors.New("keys for yes and no are required")
	}
	r := &recogniser{spec: sp}
	var err error
	re := func(s string) *regexp.Regexp {
		if s == "" || err != nil {
			return nil
		}
		var x *regexp.Regexp
		x, err = regexp.Compile(s)
		return x
	}
	r.frame, r.bottom, r.question = re(sp.Frame), re(sp.Bottom), re(sp.Question)
	r.never, r.scrolled, r.call, r.arg = re(sp.Never), re(sp.Scrolled), re(sp.Subject.Call), re(sp.Subject.Arg)
	r.top, r.fence, r.intent, r.title = re(sp.Subject.Top), re(sp.Subject.Fence), re(sp.Subject.Intent), re(sp.Subject.Title)
	r.file, r.destination, r.skip = re(sp.Subject.File), re(sp.Subject.Destination), re(sp.Subject.Skip)
	r.end, r.turn, r.cut = re(sp.Subject.End), re(sp.Subject.Turn), re(sp.Subject.Cut)
	if sp.Menu != nil {
		if sp.Menu.Marker == "" || sp.Menu.AllowOnce == "" || sp.Menu.Deny == "" {
			return nil, errors.New("a menu needs marker, allow_once and deny")
		}
		r.allowOnce, r.deny, r.hint = re(sp.Menu.AllowOnce), re(sp.Menu.Deny), re(sp.Menu.Hint)
		r.option = re(`^(` + regexp.QuoteMeta(sp.Menu.Marker) + `\s*)?([1-9])\.\s+(\S.*)$`)
	}
	for _, t := range sp.Tools {
		r.tools = append(r.tools, compiledTool{toolSpec: t, title: re(t.Title)})
		if t.Tool == "" || t.Kind == "" || t.Arg == "" {
			return nil, errors.New("a tool needs tool, kind and arg")
		}
		if !action.Kind(t.Kind).Valid() {
			return nil, fmt.Errorf("unknown kind %q", t.Kind)
		}
		if t.Lines != "" && t.Lines != linesNumbered && t.Lines != linesDiff && t.Lines != linesMCP {
			return nil, fmt.Errorf("unknown lines %q", t.Lines)
		}
	}
	if err != nil {
		return nil, err
	}
	switch sp.Subject.Style {
	case styleFenced:
		if r.top == nil || r.fence == nil || len(r.tools) == 0 {
			return nil, errors.New("a fenced subject needs top, fence and tools")
		}
	case stylePrefixed:
		if sp.Subject.Prefix == "" || len(r.tools) != 1 {
			return nil, errors.New("a prefixed subject needs a prefix and one tool")
		}
	case styleBoxed:
		if r.top == nil || r.frame == nil || len(r.tools) != 1 {
			return nil, errors.New("a boxed subject needs top, frame and one tool")
		}
	case stylePatch:
		if r.file == nil || r.destination == nil || len(r.tools) != 1 {
			return nil, errors.New("a patch subject needs file, destination and one tool")
		}
		if n := r.file.NumSubexp(); n != 4 {
			return nil, errors.New("a patch's file header needs four groups: what, name, added, removed")
		}
	case styleTool:
		if r.call == nil || r.call.SubexpIndex("server") < 0 || r.call.SubexpIndex("tool") < 0 {
			return nil, errors.New("a tool subject needs a call with the groups server and tool")
		}
		if r.call.SubexpIndex("args") < 0 && (r.arg == nil || r.arg.SubexpIndex("name") < 0 || r.arg.SubexpIndex("value") < 0) {
			return nil, errors.New("a tool subject needs the call's args group, or an arg with the groups name and value")
		}
	case stylePlan:
		switch sp.Subject.At {
		case planFenced, "":
			if r.fence == nil || r.title == nil || len(r.tools) != 1 {
				return nil, errors.New("a fenced plan needs fence, title and one tool")
			}
		case planUnder:
			if len(r.tools) != 1 {
				return nil, errors.New("a plan under its question needs one tool")
			}
		case planAbove:
			if r.title == nil || r.end == nil || r.turn == nil || len(r.tools) != 1 {
				return nil, errors.New("a plan above its question needs title, end, turn and one tool")
			}
		default:
			return nil, fmt.Errorf("unknown plan place %q", sp.Subject.At)
		}
	case styleNone:
	default:
		return nil, fmt.Errorf("unknown subject style %q", sp.Subject.Style)
	}
	if sp.Subject.Style != styleNone && r.option == nil {
		return nil, errors.New("a prompt with a subject needs a menu")
	}
	return r, nil
}

// Option is one numbered option of a prompt's menu.
type Option struct {
	Number int
	Label  string
}

// Prompt is a recognised prompt and what it asks about.
type Prompt struct {
	Recogniser string
	Agent      string
	Question   string
	// The call the prompt asks about. Tool is empty when the prompt does
	// not say (then Kind is other and Args hold the question).
	Tool   string
	Kind   action.Kind
	Args   map[string]any
	Intent string
	// Incomplete says why the subject was not read whole (wrapped, cut,
	// unreadable characters, a kind of prompt that does not show it):
	// such a prompt is never answered without a person.
	Incomplete string
	Options    []Option
	// Selected, AllowOnce and Deny are indexes into Options (-1: none).
	Selected, AllowOnce, Deny int
	YesKeys, NoKeys           []string
	// Feedback: after the no keys the agent takes the reason as text.
	Feedback bool
	// Top and Bottom are the screen lines the prompt spans; Row is the
	// line of the question (where a line prompt's cursor must be).
	Top, Bottom, Row int
	// Excerpt is the prompt as drawn.
	Excerpt string
}

// Complete reports whether the subject was read whole.
func (p *Prompt) Complete() bool { return p.Incomplete == "" }

// Key identifies the prompt as drawn: two captures with the same key show
// the same prompt in the same state.
func (p *Prompt) Key() string {
	return p.Recogniser + "\x00" + strconv.Itoa(p.Selected) + "\x00" + p.Excerpt
}

// Action is the call the prompt asks about, for the firewall to judge.
// An incomplete prompt asks for a person (HumanRequested).
func (p *Prompt) Action() *action.Action {
	a := &action.Action{Agent: p.Agent, Tool: p.Tool, Kind: p.Kind, Args: p.Args, Intent: p.Intent}
	if a.Args == nil {
		a.Args = map[string]any{}
	}
	if p.Incomplete != "" {
		a.HumanRequested = true
	}
	return a
}

// Recognise finds a prompt at the bottom of sc, drawn by a pane whose
// foreground command is process ("" skips the check, for fixtures that
// lack it — the watcher always passes it).
func (s *Set) Recognise(sc *Screen, process string) (*Prompt, bool) {
	for _, r := range s.rs {
		if process != "" && len(r.Processes) > 0 && !slices.Contains(r.Processes, process) {
			continue
		}
		if p, ok := r.recognise(sc); ok {
			return p, true
		}
	}
	return nil, false
}

// maxPromptLines bounds how far above its bottom a prompt may start.
const maxPromptLines = 60

// content is line i of the screen inside the recogniser's frame, trimmed;
// ok is false when the line is not framed as the recogniser expects.
func (r *recogniser) content(sc *Screen, i int) (string, bool) {
	if i < 0 || i >= len(sc.Lines) {
		return "", false
	}
	l := sc.Lines[i]
	if r.frame != nil {
		m := r.frame.FindStringSubmatch(l)
		if m == nil {
			return "", false
		}
		l = m[1]
	}
	return strings.TrimSpace(l), true
}

func (r *recogniser) recognise(sc *Screen) (*Prompt, bool) {
	last := sc.lastLine()
	if last < 0 {
		return nil, false
	}
	p := &Prompt{Recogniser: r.Name, Agent: r.Agent, Selected: -1, AllowOnce: -1, Deny: -1,
		YesKeys: r.Keys.Yes, NoKeys: r.Keys.No, Bottom: last, Feedback: r.Feedback}
	cur := last
	if r.bottom != nil {
		// The bottom line may be outside the frame (a box's lower edge).
		l := strings.TrimSpace(sc.Lines[last])
		if !r.bottom.MatchString(l) {
			return nil, false
		}
		cur--
	}
	if r.option == nil {
		// A line prompt: the question is the last line.
		l, ok := r.content(sc, cur)
		if !ok || !r.question.MatchString(l) {
			return nil, false
		}
		p.Question, p.Row, p.Top = l, cur, max(cur-maxPromptLines, 0)
		p.Excerpt = sc.Excerpt(p.Top, last)
		r.generic(p)
		return p, true
	}
	// The menu, read upwards.
	var opts []Option
	scrolled := false
	marked := -1
	// Lines under an option that are not options continue its label (a
	// long label wraps); read upwards, they come before the option.
	var more []string
	for ; cur >= 0 && last-cur < maxPromptLines; cur-- {
		l, ok := r.content(sc, cur)
		if !ok {
			return nil, false
		}
		if l == "" && len(opts) == 0 {
			continue
		}
		if len(opts) == 0 && r.hint != nil && r.hint.MatchString(l) {
			continue
		}
		if len(opts) == 0 && r.scrolled != nil && r.scrolled.MatchString(l) {
			scrolled = true
			continue
		}
		m := r.option.FindStringSubmatch(l)
		if m == nil {
			if len(opts) == 0 || l == "" || r.question.MatchString(l) || len(more) >= 3 {
				break
			}
			more = append(more, l)
			continue
		}
		n, _ := strconv.Atoi(m[2])
		if m[1] != "" {
			if marked >= 0 {
				return nil, false // two selections: not a menu as drawn by the agent
			}
			marked = len(opts)
		}
		label := m[3]
		for i := len(more) - 1; i >= 0; i-- {
			label += " " + more[i]
		}
		more = nil
		opts = append(opts, Option{Number: n, Label: label})
	}
	// Lines above the first option belong to no option.
	cur += len(more)
	if len(opts) < 2 || marked < 0 {
		return nil, false
	}
	slices.Reverse(opts)
	marked = len(opts) - 1 - marked
	for i, o := range opts {
		if o.Number != i+1 {
			return nil, false
		}
	}
	optTop := cur + 1
	// The question: directly above the menu, or above the subject lines
	// of a prefixed prompt.
	q := -1
	for i := cur; i >= 0 && last-i < maxPromptLines; i-- {
		l, ok := r.content(sc, i)
		if !ok {
			return nil, false
		}
		if r.question.MatchString(l) {
			q = i
			break
		}
		if l != "" && r.Subject.Style != stylePrefixed && r.Subject.Style != stylePatch && r.Subject.Style != styleTool &&
			(r.Subject.Style != stylePlan || r.Subject.At != planUnder) {
			return nil, false
		}
	}
	if q < 0 {
		return nil, false
	}
	p.Question, _ = r.content(sc, q)
	p.Row = q
	p.Options, p.Selected = opts, marked
	for i, o := range opts {
		if p.AllowOnce < 0 && r.allowOnce.MatchString(o.Label) && (r.never == nil || !r.never.MatchString(o.Label)) {
			p.AllowOnce = i
		}
		if p.Deny < 0 && r.deny.MatchString(o.Label) {
			p.Deny = i
		}
	}
	var top int
	var ok bool
	switch r.Subject.Style {
	case styleFenced:
		top, ok = r.fenced(sc, p, q)
	case stylePrefixed:
		top, ok = r.prefixed(sc, p, q, optTop)
	case styleBoxed:
		top, ok = r.boxed(sc, p, q)
	case stylePatch:
		top, ok = r.patch(sc, p, q, optTop)
	case styleTool:
		top, ok = r.tool(sc, p, q, optTop)
	case stylePlan:
		switch r.Subject.At {
		case planUnder:
			top, ok = r.planUnder(sc, p, q, optTop)
		case planAbove:
			top, ok = r.planAbove(sc, p, q)
		default:
			top, ok = r.plan(sc, p, q)
		}
	default:
		top, ok = q, true
		r.generic(p)
	}
	if !ok && scrolled {
		// What it asks about is partly above the pane's top: a person reads
		// it at the terminal.
		top, ok = 0, true
		p.Tool, p.Kind, p.Intent = "", action.KindOther, ""
		p.Args = map[string]any{"question": p.Question}
	}
	if !ok {
		return nil, false
	}
	if scrolled {
		p.incomplete("the prompt is taller than the pane: part of it is not on screen")
	}
	p.Top = top
	p.Excerpt = sc.Excerpt(top, last)
	if p.AllowOnce < 0 {
		p.incomplete("the menu has no option that allows once")
	}
	return p, true
}

func (p *Prompt) incomplete(why string) {
	if p.Incomplete == "" {
		p.Incomplete = why
	}
}

// generic fills a prompt that does not show its subject.
func (r *recogniser) generic(p *Prompt) {
	p.Tool, p.Kind = "terminal_prompt", action.KindOther
	p.Args = map[string]any{"question": p.Question}
	p.incomplete("the prompt does not show exactly what it confirms")
}

// fenced reads a Claude Code style prompt, top down from its rule: a
// title and detail lines, a fence, the subject, a fence, then notes (e.g.
// warnings, fenced too) up to the question.
func (r *recogniser) fenced(sc *Screen, p *Prompt, q int) (int, bool) {
	top := q - 1
	for top >= 0 && q-top < maxPromptLines && !r.top.MatchString(strings.TrimSpace(sc.Lines[top])) {
		top--
	}
	if top < 0 || q-top >= maxPromptLines {
		return 0, false
	}
	var header, body []string
	fences := 0
	for _, l := range sc.Lines[top+1 : q] {
		if r.fence.MatchString(strings.TrimSpace(l)) {
			fences++
			continue
		}
		switch fences {
		case 0:
			if l = strings.TrimSpace(l); l != "" {
				header = append(header, l)
			}
		case 1:
			body = append(body, l)
		}
	}
	if len(header) == 0 || fences < 2 || fences%2 != 0 {
		return 0, false
	}
	// A subject drawn with a gutter (wrapped or several lines) loses it.
	gutter := len(body) > 0
	for _, l := range body {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "│") {
			gutter = false
		}
	}
	if gutter {
		for i, l := range body {
			t := strings.TrimPrefix(strings.TrimSpace(l), "│")
			body[i] = strings.TrimPrefix(t, " ")
		}
	}
	r.fill(p, header[0], strings.Join(header[1:], "\n"), body)
	return top, true
}

// prefixed reads a Codex style prompt: the question, lines of detail, the
// subject after its prefix, then the menu.
func (r *recogniser) prefixed(sc *Screen, p *Prompt, q, optTop int) (int, bool) {
	var body []string
	in := false
	for i := q + 1; i < optTop; i++ {
		l, _ := r.content(sc, i)
		if r.intent != nil {
			if m := r.intent.FindStringSubmatch(l); m != nil && !in {
				p.Intent = m[1]
				continue
			}
		}
		if !in && strings.HasPrefix(l, r.Subject.Prefix) {
			in = true
			body = append(body, strings.TrimPrefix(l, r.Subject.Prefix))
			continue
		}
		if in {
			body = append(body, l)
		}
	}
	if !in {
		return 0, false
	}
	// A command has one line on screen; anything after it before the menu
	// is a wrapped or continued command.
	for len(body) > 1 && strings.TrimSpace(body[len(body)-1]) == "" {
		body = body[:len(body)-1]
	}
	r.fill(p, "", "", body)
	return q, true
}

// boxed reads a Gemini CLI style prompt: inside a framed box, a title line,
// an inner box holding the subject, then the question.
func (r *recogniser) boxed(sc *Screen, p *Prompt, q int) (int, bool) {
	i := q - 1
	for {
		l, ok := r.content(sc, i)
		if !ok {
			return 0, false
		}
		if l != "" {
			break
		}
		i--
	}
	if l, _ := r.content(sc, i); !strings.HasPrefix(l, "╰") || !strings.HasSuffix(l, "╯") {
		return 0, false
	}
	end := i
	var body []string
	for i--; ; i-- {
		l, ok := r.content(sc, i)
		if !ok || q-i >= maxPromptLines {
			return 0, false
		}
		if strings.HasPrefix(l, "╭") && strings.HasSuffix(l, "╮") {
			break
		}
		m := r.frame.FindStringSubmatch(l)
		if m == nil {
			return 0, false
		}
		body = append(body, m[1])
	}
	_ = end
	slices.Reverse(body)
	title, ok := r.content(sc, i-1)
	if !ok || r.title == nil || !r.title.MatchString(title) {
		return 0, false
	}
	top := i - 2
	if top < 0 || !r.top.MatchString(strings.TrimSpace(sc.Lines[top])) {
		return 0, false
	}
	r.fill(p, "", "", body)
	return top, true
}

// tool reads an MCP tool call: the line naming the server, the tool and its
// arguments (a JSON object, drawn whole on one line), above the question.
// The call is the one the agents' hooks report: mcp__<server>__<tool>
// with the arguments.
func (r *recogniser) tool(sc *Screen, p *Prompt, q, optTop int) (int, bool) {
	qm := r.question.FindStringSubmatch(p.Question)
	for i := q; i >= 0 && q-i < maxPromptLines; i-- {
		l, ok := r.content(sc, i)
		if !ok {
			break // the frame's top: the call is not in it
		}
		m := r.call.FindStringSubmatch(l)
		if m == nil {
			if i < q && r.top != nil && r.top.MatchString(strings.TrimSpace(sc.Lines[i])) {
				break
			}
			continue
		}
		server, tool := m[r.call.SubexpIndex("server")], m[r.call.SubexpIndex("tool")]
		var args string
		if j := r.call.SubexpIndex("args"); j >= 0 {
			args = m[j]
		} else {
			args = r.argLines(sc, p, q, optTop)
		}
		p.Tool, p.Kind = "mcp__"+server+"__"+tool, action.KindMCP
		p.Args = map[string]any{}
		for _, g := range []string{"server", "tool"} {
			if j := r.question.SubexpIndex(g); j >= 0 && qm != nil && qm[j] != map[string]string{"server": server, "tool": tool}[g] {
				p.incomplete("the question names another " + g + " than the call")
			}
		}
		var obj map[string]any
		switch {
		case strings.ContainsRune(args, '\uFFFD'):
			p.incomplete("the arguments hold characters that were not drawn as text")
		case json.Unmarshal([]byte(args), &obj) != nil || obj == nil:
			p.incomplete("the arguments are not shown whole (cut, wrapped or folded)")
		case truncated.MatchString(args):
			p.incomplete("the arguments look cut short")
		case strings.ContainsAny(server+tool, " \t\uFFFD"):
			p.incomplete("the server or tool name does not read")
		}
		if obj != nil {
			p.Args = obj
		} else {
			p.Args["arguments"] = args
		}
		if r.Hides != "" {
			p.incomplete(r.Hides)
		}
		// A framed prompt starts at its frame's top, another at the call.
		top := i
		for r.frame != nil && top > 0 && q-top < maxPromptLines && (r.top == nil || !r.top.MatchString(strings.TrimSpace(sc.Lines[top]))) {
			if _, ok := r.content(sc, top-1); !ok {
				break
			}
			top--
		}
		return top, true
	}
	p.Tool, p.Kind = "", action.KindOther
	p.Args = map[string]any{"question": p.Question}
	p.incomplete("the tool call is not on screen")
	return q, true
}

// argLines reads the arguments drawn one a line ("name: value") between
// the question and the menu, as a JSON object. A value is shown as text,
// so one that reads as another JSON type (a number, true, a quoted string)
// may not be what the call holds; one with spaces may hold line breaks; a
// line as wide as the pane may go on below (wrapped): each leaves the
// prompt incomplete.
func (r *recogniser) argLines(sc *Screen, p *Prompt, q, optTop int) string {
	obj := map[string]any{}
	for i := q + 1; i < optTop; i++ {
		l, _ := r.content(sc, i)
		if l == "" {
			continue
		}
		m := r.arg.FindStringSubmatch(l)
		if m == nil {
			p.incomplete("a line between the question and the menu is not an argument (wrapped or folded)")
			continue
		}
		name, value := m[r.arg.SubexpIndex("name")], m[r.arg.SubexpIndex("value")]
		var v any
		if json.Unmarshal([]byte(value), &v) == nil {
			if _, isText := v.(string); !isText || strings.HasPrefix(value, `"`) {
				p.incomplete("an argument's type cannot be told from the screen")
			}
		}
		if strings.ContainsAny(value, " \t") {
			// Codex draws a line break in a value as a space
			// (mcp-newline-arg): "echo hi\nrm -rf /" reads "echo hi rm -rf /".
			p.incomplete("an argument holds spaces, which may be line breaks: Codex draws both alike")
		}
		if _, dup := obj[name]; dup {
			p.incomplete("an argument is shown twice")
		}
		if sc.Width > 0 && len([]rune(sc.Lines[i])) >= sc.Width-1 {
			p.incomplete("an argument fills the pane's width: it may go on below")
		}
		obj[name] = value
	}
	b, _ := json.Marshal(obj)
	return string(b)
}

// plan reads a Claude Code style plan prompt: above the question (and a
// rule), the plan between two fences, titled. The plan is drawn rendered
// from its markdown, not as written: it is read for the person, never
// answered alone.
func (r *recogniser) plan(sc *Screen, p *Prompt, q int) (int, bool) {
	i := q - 1
	for i >= 0 && (strings.TrimSpace(sc.Lines[i]) == "" || r.top != nil && r.top.MatchString(strings.TrimSpace(sc.Lines[i]))) {
		i--
	}
	if i < 0 || !r.fence.MatchString(strings.TrimSpace(sc.Lines[i])) {
		return 0, false
	}
	var body []string
	for i--; i >= 0 && q-i < maxPromptLines && !r.fence.MatchString(strings.TrimSpace(sc.Lines[i])); i-- {
		body = append(body, sc.Lines[i])
	}
	if i < 1 || q-i >= maxPromptLines || !r.title.MatchString(strings.TrimSpace(sc.Lines[i-1])) {
		return 0, false
	}
	slices.Reverse(body)
	t := r.tools[0]
	p.Tool, p.Kind = t.Tool, action.Kind(t.Kind)
	lines := make([]string, 0, len(body))
	for _, l := range body {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	p.Args = map[string]any{t.Arg: strings.Join(lines, "\n")}
	p.incomplete("a plan is drawn from its markdown, not as written: a person reads it")
	top := i - 1
	for top > 0 && q-top < maxPromptLines && (r.top == nil || !r.top.MatchString(strings.TrimSpace(sc.Lines[top]))) {
		top--
	}
	return top, true
}

// planText is a plan's text as read: its lines trimmed, blank ones left
// out (the agents draw a plan from its markdown, so it is read for the
// person, never as written).
func planText(lines []string) string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// planUnder reads a Gemini CLI style plan: the lines between the question
// and the menu, inside the prompt's frame. The box's top edge is the
// line above the question.
func (r *recogniser) planUnder(sc *Screen, p *Prompt, q, optTop int) (int, bool) {
	if q < 1 {
		return 0, false
	}
	if l := strings.TrimSpace(sc.Lines[q-1]); r.frame != nil && (!strings.HasPrefix(l, "╭") || !strings.HasSuffix(l, "╮")) {
		return 0, false
	}
	var body []string
	for i := q + 1; i < optTop; i++ {
		l, ok := r.content(sc, i)
		if !ok {
			return 0, false
		}
		body = append(body, l)
	}
	t := r.tools[0]
	p.Tool, p.Kind = t.Tool, action.Kind(t.Kind)
	for _, l := range body {
		if r.cut != nil && r.cut.MatchString(l) {
			p.Args = map[string]any{"question": p.Question}
			p.Incomplete = "the plan is cut short on screen (the agent hides part of it): a person reads it at the terminal"
			return q - 1, true
		}
	}
	p.Args = map[string]any{t.Arg: planText(body)}
	p.incomplete("a plan is drawn from its markdown, not as written: a person reads it")
	if strings.ContainsRune(p.Args[t.Arg].(string), '\uFFFD') {
		p.incomplete("the plan holds characters that were not drawn as text")
	}
	return q - 1, true
}

// planAbove reads a Codex style plan: not in the prompt but in the
// conversation above it, a block under its title. It is read only when
// the person's last message is on screen below the pane's top line (so
// the whole turn is), the plan is the first block after it and no other
// block is titled as the plan: the model's own text can draw a line like
// the title. Otherwise the plan is not read; the prompt still goes to a
// person.
func (r *recogniser) planAbove(sc *Screen, p *Prompt, q int) (int, bool) {
	t := r.tools[0]
	p.Tool, p.Kind = t.Tool, action.Kind(t.Kind)
	p.Args = map[string]any{}
	p.incomplete("a plan is drawn from its markdown, not as written: a person reads it")
	title, titles, turn := -1, 0, -1
	for i := q - 1; i >= 0; i-- {
		if r.turn.MatchString(sc.Lines[i]) {
			turn = i
			break
		}
		if r.title.MatchString(strings.TrimSpace(sc.Lines[i])) {
			title = i
			titles++
		}
	}
	// The first block after the person's message (its lines go on
	// indented) must be the plan.
	first := -1
	for i := turn + 1; turn >= 0 && i < q; i++ {
		if r.end.MatchString(sc.Lines[i]) {
			first = i
			break
		}
	}
	switch {
	case turn < 1 || strings.TrimSpace(sc.Lines[turn-1]) != "":
		// Not on screen, or on its top line: Codex pins the person's
		// message there while the turn scrolls under it, so the turn may
		// be partly above the pane's top and a block titled as the plan
		// there is not seen.
		// Part of the turn is above the pane's top: a block titled as the
		// plan there is not seen, so the one seen may not be the plan.
		p.Args["question"] = p.Question
		p.Incomplete = "the person's last message is not on screen, so the plan cannot be told from the model's other text: a person reads it at the terminal"
		return q, true
	case titles == 0:
		p.Args["question"] = p.Question
		p.Incomplete = "the plan is not on screen (scrolled above the pane's top): a person reads it at the terminal"
		return q, true
	case titles > 1:
		p.Args["question"] = p.Question
		p.Incomplete = "more than one block on screen is titled as the plan: a person reads it at the terminal"
		return q, true
	case first != title:
		p.Args["question"] = p.Question
		p.Incomplete = "the block titled as the plan is not the first after the person's message: a person reads it at the terminal"
		return q, true
	}
	var body []string
	for i := title + 1; i < q && !r.end.MatchString(sc.Lines[i]); i++ {
		body = append(body, sc.Lines[i])
	}
	p.Args[t.Arg] = planText(body)
	if strings.ContainsRune(p.Args[t.Arg].(string), '\uFFFD') {
		p.incomplete("the plan holds characters that were not drawn as text")
	}
	return title, true
}

// patchLine is a line of a patch's diff as Codex shows it: its line
// number, a space, "+" or "-" and the line.
var patchLine = lazyre.New(`^( *)(\d+) ([+-])(.*)$`)

// patch reads a Codex style file-edit prompt: a header naming the file and
// how many lines it adds and removes, those lines, then the question and
// the file's full path under it. The call is the apply_patch patch that
// makes the same change, as Codex's hooks show it. It is whole only when
// the lines drawn are as many as the header counts, in one column, and the
// path under the question is the header's file.
func (r *recogniser) patch(sc *Screen, p *Prompt, q, optTop int) (int, bool) {
	t := r.tools[0]
	p.Tool, p.Kind = t.Tool, action.Kind(t.Kind)
	p.Args = map[string]any{}
	dest, dests := "", 0
	for i := q + 1; i < optTop; i++ {
		l, _ := r.content(sc, i)
		if m := r.destination.FindStringSubmatch(l); m != nil {
			dest = strings.TrimSpace(m[1])
			dests++
		}
	}
	if dests > 1 {
		// Several files ("Edited 2 files"): read by a person.
		p.incomplete("the patch changes several files")
	}
	// Upwards from the question: the diff's lines, up to the header.
	var diff []string
	top := -1
	var head []string
	for i := q - 1; i >= 0 && q-i < maxPromptLines; i-- {
		l, _ := r.content(sc, i)
		if m := r.file.FindStringSubmatch(l); m != nil {
			top, head = i, m
			break
		}
		diff = append(diff, strings.TrimRight(sc.Lines[i], " "))
	}
	if top < 0 {
		p.Args["question"] = p.Question
		p.incomplete("the patch's header is not on screen")
		return q, true
	}
	slices.Reverse(diff)
	var add, del []string
	col := -1
	bad := ""
	for _, l := range diff {
		t := strings.TrimSpace(l)
		if t == "" || r.skip != nil && r.skip.MatchString(t) {
			continue
		}
		m := patchLine.FindStringSubmatch(l)
		if m == nil {
			bad = "the patch is not shown whole (a wrapped line, or lines left out)"
			break
		}
		if c := len(m[1]) + len(m[2]); col < 0 {
			col = c
		} else if c != col {
			bad = "the patch is not shown whole (a wrapped line)"
			break
		}
		if m[3] == "+" {
			add = append(add, m[4])
		} else {
			del = append(del, m[4])
		}
	}
	what, name := head[1], head[2]
	nAdd, _ := strconv.Atoi(head[3])
	nDel, _ := strconv.Atoi(head[4])
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	switch what {
	case "Added":
		fmt.Fprintf(&b, "*** Add File: %s\n", dest)
		for _, l := range add {
			b.WriteString("+" + l + "\n")
		}
		if len(del) > 0 {
			bad = "a new file's patch shows removed lines"
		}
	case "Edited":
		fmt.Fprintf(&b, "*** Update File: %s\n@@\n", dest)
		for _, l := range del {
			b.WriteString("-" + l + "\n")
		}
		for _, l := range add {
			b.WriteString("+" + l + "\n")
		}
	default:
		// Deletions and moves: not recorded yet, so not read.
		bad = fmt.Sprintf("a patch that %s a file is not one the watcher can read", strings.ToLower(what))
	}
	b.WriteString("*** End Patch\n")
	p.Args[t.Arg] = b.String()
	switch {
	case bad != "":
		p.incomplete(bad)
	case len(add) != nAdd || len(del) != nDel:
		p.incomplete(fmt.Sprintf("the patch shows %d added and %d removed lines of the %d and %d it makes", len(add), len(del), nAdd, nDel))
	case !strings.HasPrefix(dest, "/") || !(dest == name || strings.HasSuffix(dest, "/"+name)) || !readablePath(dest):
		p.incomplete("the patched file's full path is not shown whole")
	case strings.ContainsRune(b.String(), '\uFFFD'):
		p.incomplete("the patch holds characters that were not drawn as text")
	case escapeRemnant.MatchString(b.String()):
		// Codex draws a patch with control characters removed: what is
		// left of an escape sequence says the file holds bytes not drawn.
		p.incomplete("the patch holds what is left of a terminal escape sequence: the file holds characters that were not drawn")
	case truncated.MatchString(b.String()):
		p.incomplete("the patch looks cut short")
	}
	return top, true
}

// truncated marks what agents draw where they cut text short.
var truncated = lazyre.New(`…|\.\.\.\s*$|\+\d+ (more )?lines?`)

// Ways a tool's subject is drawn (toolSpec.Lines).
const (
	linesNumbered = "numbered" // a file's content, each line numbered (Claude Code's Write)
	linesDiff     = "diff"     // numbered lines of a diff: " ", "-", "+" (Claude Code's Edit)
	linesMCP      = "mcp"      // an MCP call's arguments, "name: value" (Claude Code)
)

// mcpHeader is the detail line of Claude Code's MCP prompt: the server and
// the tool's title (not its name) — "everything — Echo Tool: (MCP)".
var mcpHeader = lazyre.New(`^(\S+) — (.+?):? \(MCP\)$`)

// mcpArg is one argument of Claude Code's MCP prompt: its name and value.
var mcpArg = lazyre.New(`^([A-Za-z_][\w.-]*): (.*)$`)

// fill sets the tool call from a header title, detail and subject lines.
func (r *recogniser) fill(p *Prompt, title, detail string, body []string) {
	var t *compiledTool
	for i := range r.tools {
		if r.tools[i].title == nil || r.tools[i].title.MatchString(title) {
			t = &r.tools[i]
			break
		}
	}
	if t == nil {
		p.Tool, p.Kind = "", action.KindOther
		p.Args = map[string]any{"question": p.Question, "title": title}
		p.incomplete(fmt.Sprintf("a prompt titled %q is not one the watcher can read", title))
		return
	}
	p.Tool, p.Kind = t.Tool, action.Kind(t.Kind)
	p.Args = map[string]any{}
	if t.Detail != "" && detail != "" {
		p.Args[t.Detail] = detail
		if t.Detail == "description" {
			p.Intent = detail
		}
	}
	lines := make([]string, 0, len(body))
	for _, l := range body {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	// Leading and trailing blank lines are the prompt's padding.
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		p.incomplete("the prompt shows nothing to judge")
		p.Args[t.Arg] = ""
		return
	}
	// The subject's common indentation is the prompt's.
	ind := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if ind < 0 || n < ind {
			ind = n
		}
	}
	for i, l := range lines {
		if len(l) >= ind {
			lines[i] = l[ind:]
		}
	}
	drawn := strings.Join(lines, "\n")
	switch t.Lines {
	case linesNumbered:
		content, why := unnumber(lines)
		if why != "" {
			p.incomplete(why)
			content = drawn
		}
		p.Args[t.Arg] = content
	case linesDiff:
		old, new, why := undiff(lines)
		if why != "" {
			p.incomplete(why)
			p.Args["diff"] = drawn
		} else {
			p.Args["old_string"], p.Args["new_string"] = old, new
		}
	case linesMCP:
		// Claude Code names the server and the tool's title, not the
		// tool: the call cannot be named as its hooks name it.
		args := map[string]any{}
		for _, l := range lines {
			m := mcpArg.FindStringSubmatch(l)
			var v any
			if m == nil || json.Unmarshal([]byte(m[2]), &v) != nil {
				args = nil
				break
			}
			args[m[1]] = v
		}
		p.Args = map[string]any{"title": detail}
		if m := mcpHeader.FindStringSubmatch(detail); m != nil {
			p.Args["server"], p.Args["title"] = m[1], m[2]
		}
		if args != nil {
			p.Args[t.Arg] = args
		} else {
			p.Args[t.Arg] = drawn
		}
		p.incomplete("Claude Code shows an MCP tool's title, not its name: the call cannot be named as its hooks name it")
	default:
		p.Args[t.Arg] = drawn
	}
	switch {
	case strings.ContainsRune(drawn+detail, '\uFFFD'):
		p.incomplete("the subject holds characters that were not drawn as text")
	case p.Kind == action.KindShell && len(lines) > 1:
		p.incomplete("the command spans several lines on screen (wrapped or multi-line): what runs cannot be read back exactly")
	case p.Kind != action.KindShell && t.Lines == "":
		p.incomplete("the subject is not drawn in a form the watcher can read back exactly")
	case truncated.MatchString(drawn) || truncated.MatchString(detail):
		p.incomplete("the subject looks cut short")
	case p.Kind == action.KindShell && escapeRemnant.MatchString(drawn):
		p.incomplete("the command holds what is left of a terminal escape sequence: what runs holds characters that were not drawn")
	case p.Kind == action.KindShell && r.Hides != "":
		p.incomplete(r.Hides)
	case t.Detail == "file_path" && !readablePath(detail):
		p.incomplete("the file's path is not shown whole (wrapped, shortened or relative to a home directory)")
	}
}

// readablePath reports whether a file path drawn in a prompt's header can
// be taken as it is: one line, not shortened, not "~/…" (whose home is the
// agent's).
func readablePath(s string) bool {
	return s != "" && !strings.ContainsAny(s, "\n\t") && !strings.HasPrefix(s, "~") && strings.TrimSpace(s) == s
}

// escapeRemnant matches what an agent that removes only the ESC (and BEL)
// of a control sequence leaves on screen: "[2K", "[31m", "]0;".
var escapeRemnant = lazyre.New(`\[\d+(;\d+)*[A-Za-z]|\]\d*;`)

// numberedLine is a line of file content as Claude Code shows it: its
// number right-aligned in a column, a space, the line.
var numberedLine = lazyre.New(`^( *)(\d+)(?: (.*))?$`)

// unnumber reads a file's content from its numbered lines. Every line must
// carry the next number in the same column: a line without one is the
// continuation of a wrapped line, a gap is content not shown. The last
// newline is not drawn; a file written whole ends with one.
func unnumber(lines []string) (string, string) {
	out := make([]string, 0, len(lines))
	col := -1
	for i, l := range lines {
		m := numberedLine.FindStringSubmatch(l)
		if m == nil || m[2] != strconv.Itoa(i+1) {
			return "", "the file content is not shown whole (a wrapped line, or lines left out)"
		}
		if c := len(m[1]) + len(m[2]); col < 0 {
			col = c
		} else if c != col {
			return "", "the file content is not shown whole (a wrapped line)"
		}
		out = append(out, m[3])
	}
	return strings.Join(out, "\n") + "\n", ""
}

// diffLine is a line of an edit's diff as Claude Code shows it: a line
// number right-aligned in a column, a space, the mark (" " kept, "-"
// removed, "+" added) and the line.
var diffLine = lazyre.New(`^( *)(\d+)(?: ([ +-])(.*))?$`)

// undiff reads an edit's diff, one hunk: the text it replaces and the text
// it puts in its place, each with the unchanged lines around the change
// (the same edit). The numbers must follow one another: kept and added
// lines count in the new file, removed lines in the old; anything else (a
// wrapped line, a second hunk, lines left out) is not read.
func undiff(lines []string) (string, string, string) {
	var old, new []string
	col, oldN, newN, changed := -1, 0, 0, false
	for i, l := range lines {
		m := diffLine.FindStringSubmatch(l)
		if m == nil {
			return "", "", "the diff is not shown whole (a wrapped line, or several parts)"
		}
		n, err := strconv.Atoi(m[2])
		if err != nil {
			return "", "", "the diff's line numbers do not read"
		}
		if c := len(m[1]) + len(m[2]); col < 0 {
			col = c
		} else if c != col {
			return "", "", "the diff is not shown whole (a wrapped line)"
		}
		if i == 0 {
			oldN, newN = n, n
		}
		mark, text := m[3], m[4]
		if mark == "" {
			mark = " " // a kept empty line: its trailing space is not drawn
		}
		switch mark {
		case " ":
			if n != newN {
				return "", "", "the diff is not shown whole (lines left out)"
			}
			old, new = append(old, text), append(new, text)
			oldN++
			newN++
		case "-":
			if n != oldN {
				return "", "", "the diff is not shown whole (lines left out)"
			}
			old = append(old, text)
			oldN++
			changed = true
		case "+":
			if n != newN {
				return "", "", "the diff is not shown whole (lines left out)"
			}
			new = append(new, text)
			newN++
			changed = true
		}
	}
	if !changed {
		return "", "", "the diff shows no change"
	}
	return strings.Join(old, "\n"), strings.Join(new, "\n"), ""
}
