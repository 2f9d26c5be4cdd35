package watch

import (
	"bytes"
	_ "embed"
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
	styleNone     = "none"
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
	} `yaml:"menu"`
	Never string `yaml:"never"`
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
	top, fence, intent, title *regexp.Regexp
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
	r.never = re(sp.Never)
	r.top, r.fence, r.intent, r.title = re(sp.Subject.Top), re(sp.Subject.Fence), re(sp.Subject.Intent), re(sp.Subject.Title)
	if sp.Menu != nil {
		if sp.Menu.Marker == "" || sp.Menu.AllowOnce == "" || sp.Menu.Deny == "" {
			return nil, errors.New("a menu needs marker, allow_once and deny")
		}
		r.allowOnce, r.deny = re(sp.Menu.AllowOnce), re(sp.Menu.Deny)
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
		if l != "" && r.Subject.Style != stylePrefixed {
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
	default:
		top, ok = q, true
		r.generic(p)
	}
	if !ok {
		return nil, false
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

// truncated marks what agents draw where they cut text short.
var truncated = lazyre.New(`…|\.\.\.\s*$|\+\d+ (more )?lines?`)

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
	if t.Lines == "numbered" {
		lines = unnumber(lines, p)
	}
	text := strings.Join(lines, "\n")
	p.Args[t.Arg] = text
	switch {
	case strings.ContainsRune(text, '\uFFFD'):
		p.incomplete("the subject holds characters that were not drawn as text")
	case p.Kind == action.KindShell && len(lines) > 1:
		p.incomplete("the command spans several lines on screen (wrapped or multi-line): what runs cannot be read back exactly")
	case p.Kind != action.KindShell:
		p.incomplete("file content read from a screen may differ from what is written (wrapping, tabs, the last newline)")
	case truncated.MatchString(text):
		p.incomplete("the subject looks cut short")
	case p.Kind == action.KindShell && escapeRemnant.MatchString(text):
		p.incomplete("the command holds what is left of a terminal escape sequence: what runs holds characters that were not drawn")
	case p.Kind == action.KindShell && r.Hides != "":
		p.incomplete(r.Hides)
	}
}

// escapeRemnant matches what an agent that removes only the ESC (and BEL)
// of a control sequence leaves on screen: "[2K", "[31m", "]0;".
var escapeRemnant = lazyre.New(`\[\d+(;\d+)*[A-Za-z]|\]\d*;`)

// numberedLine is a line of file content as Claude Code shows it.
var numberedLine = lazyre.New(`^\s*(\d+) ?(.*)$`)

// unnumber strips line numbers; a gap in them means content not shown.
func unnumber(lines []string, p *Prompt) []string {
	out := make([]string, 0, len(lines))
	for i, l := range lines {
		m := numberedLine.FindStringSubmatch(l)
		if m == nil || m[1] != strconv.Itoa(i+1) {
			p.incomplete("the file content is not shown whole")
			return lines
		}
		out = append(out, m[2])
	}
	return out
}
