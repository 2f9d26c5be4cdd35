package web

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/store"
)

// hostile is text an agent under the firewall controls (a tool name, its
// arguments, a preview), written to break out of where a page puts it.
const hostile = `</code></pre><script>alert(1)</script><img src=x onerror=alert(2)>"' onmouseover="alert(3)" &amp; {{.Who}}`

// parseHTML parses a page as a browser would and fails on a parse error.
func parseHTML(t *testing.T, page string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// walk calls fn on every node under n.
func walk(n *html.Node, fn func(*html.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

// shape lists the elements of a page with their attributes' names: text
// that escapes where a page puts it changes the shape.
func shape(doc *html.Node) string {
	var b strings.Builder
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		b.WriteString("<" + n.Data)
		for _, a := range n.Attr {
			b.WriteString(" " + a.Key)
		}
		b.WriteString(">\n")
	})
	return b.String()
}

// sameShape fails when hostile text changed a page's structure from the
// page rendered with plain text.
func sameShape(t *testing.T, name, plain, evil string) *html.Node {
	t.Helper()
	doc := parseHTML(t, evil)
	if s0, s1 := shape(parseHTML(t, plain)), shape(doc); s0 != s1 {
		t.Fatalf("hostile text changed the %s page's structure:\n%s\nwant\n%s", name, s1, s0)
	}
	return doc
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// text is the text under n.
func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return b.String()
}

func TestPagesEscapeWhatAgentsAndPeopleWrite(t *testing.T) {
	ps, err := loadPages(asset)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	apr := &store.Approval{Tool: hostile, Agent: hostile, Session: hostile, Level: action.Approve,
		DefaultDecision: "deny", CreatedAt: now.Add(-90 * time.Second), Deadline: now.Add(5 * time.Minute),
		Action:  action.Action{Cwd: hostile, Args: map[string]any{"command": hostile, hostile: 1}},
		Verdict: action.Verdict{Preview: &action.Preview{Summary: hostile, Items: []string{hostile}, More: 2, Diff: hostile}}}
	plainApr := &store.Approval{Tool: "x", Agent: "x", Session: "x", Level: action.Approve,
		DefaultDecision: "deny", CreatedAt: apr.CreatedAt, Deadline: apr.Deadline,
		Action:  action.Action{Cwd: "x", Args: map[string]any{"command": "x", "y": 1}},
		Verdict: action.Verdict{Preview: &action.Preview{Summary: "x", Items: []string{"x"}, More: 2, Diff: "x"}}}
	render := func(p *page, vals map[string]frag) string {
		t.Helper()
		var b strings.Builder
		if err := p.render(&b, vals); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	doc := sameShape(t, "link",
		render(ps.link, linkVals(linkView{Title: "x", Message: "x", Token: "t", Claims: LinkClaims{Decision: "deny", Who: "x"}, Approval: plainApr}, now)),
		render(ps.link, linkVals(linkView{Title: hostile, Message: hostile, Token: "t", Claims: LinkClaims{Decision: "deny", Who: hostile}, Approval: apr}, now)))
	body := text(doc)
	// Each hostile value is shown, as text, once per place it goes.
	if n := strings.Count(body, hostile); n < 12 {
		t.Errorf("the link page shows the hostile text %d times as text, want at least 12:\n%s", n, body)
	}
	for _, want := range []string{"times out in 5m0s (deny)", "1m30s ago", "and 2 more", "Deny"} {
		if !strings.Contains(body, want) {
			t.Errorf("the link page lacks %q", want)
		}
	}
	var dec string
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "input" && attr(n, "name") == "decision" {
			dec = attr(n, "value")
		}
	})
	if dec != "deny" {
		t.Errorf("the form's decision is %q, want deny", dec)
	}

	app := render(ps.app, appVals(hostile, hostile, true, []string{hostile}, true))
	doc = sameShape(t, "console", render(ps.app, appVals("x", "x", true, []string{"x"}, true)), app)
	var csrf, who string
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "meta" {
			switch attr(n, "name") {
			case "csrf-token":
				csrf = attr(n, "content")
			case "who":
				who = attr(n, "content")
			}
		}
	})
	if csrf != hostile || who != hostile {
		t.Errorf("the console page's meta values are %q and %q, want the text as given", csrf, who)
	}
	for _, id := range []string{`id="unaudited-banner"`, `id="pending-key-banner"`, "without TLS"} {
		if !strings.Contains(app, id) {
			t.Errorf("the console page lacks %s", id)
		}
	}
	if app := render(ps.app, appVals("c", "w", false, nil, false)); strings.Contains(app, "banner warn\" id") || strings.Contains(app, "without TLS") {
		t.Errorf("the console page shows banners nobody asked for")
	}

	login := render(ps.login, loginVals(hostile, hostile, false))
	doc = sameShape(t, "sign-in", render(ps.login, loginVals("x", "x", false)), login)
	if !strings.Contains(text(doc), hostile) || strings.Contains(login, "without TLS") {
		t.Errorf("the sign-in page does not show the error as text, or warns about TLS on loopback:\n%s", login)
	}
}

func TestParsePageRefusesTemplateActions(t *testing.T) {
	for _, page := range []string{
		"<p>{{.Nope}}</p>",
		"<p>{{if .Who}}x{{end}}</p>",
		"<p>{{.Who}</p>",
		"<p>{{ .Who }}</p>",
		"<p>{{Who}}</p>",
		// Where escaping HTML is not enough.
		`<a href="{{.Who}}">x</a>`,
		`<img src="/{{.Who}}">`,
		`<div onclick="f({{.Who}})">`,
		`<div style="color: {{.Who}}">`,
		`<p title={{.Who}}>`,
		`<p title='{{.Who}}'>`,
		`<script>var who = "{{.Who}}";</script>`,
		`<style>p { content: "{{.Who}}" }</style>`,
		`<!-- {{.Who}} -->`,
	} {
		if _, err := parsePage(page, "t", "Who"); !errors.Is(err, errPage) {
			t.Errorf("parsePage(%q) = %v, want errPage", page, err)
		}
	}
	for _, ok := range []string{`<title>{{.Who}}</title>`, `<meta name="who" content="{{.Who}}">`,
		`<script src="/s.js"></script><p class="x-{{.Who}}">`, `<textarea>{{.Who}}</textarea>`,
		`<input value="{{.Who}}" placeholder="a">`} {
		if _, err := parsePage(ok, "t", "Who"); err != nil {
			t.Errorf("parsePage(%q): %v", ok, err)
		}
	}
	p, err := parsePage(`<p title="{{.Who}}">{{.Who}} {"a": {"b": 1}}</p>`, "t", "Who")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.render(&b, map[string]frag{"Who": esc(`a"b`)}); err != nil {
		t.Fatal(err)
	}
	if want := `<p title="a&#34;b">a&#34;b {"a": {"b": 1}}</p>`; b.String() != want {
		t.Errorf("render = %q, want %q", b.String(), want)
	}
}

// FuzzEsc: escaped text reads back, in element text and in a quoted
// attribute value, as the text it was (as a browser normalises it), and
// never adds an element or an attribute.
func FuzzEsc(f *testing.F) {
	for _, s := range []string{"", hostile, "a\x00b", "\xff\xfe", "&lt;", "</p><p x='1'>", "\r\n", "+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		page := `<!doctype html><body><p id="x" title="` + string(esc(s)) + `">` + string(esc(s)) + `</p></body>`
		doc := parseHTML(t, page)
		var ps []*html.Node
		walk(doc, func(n *html.Node) {
			if n.Type == html.ElementNode && n.Data != "html" && n.Data != "head" && n.Data != "body" {
				ps = append(ps, n)
			}
		})
		if len(ps) != 1 || ps[0].Data != "p" || len(ps[0].Attr) != 2 {
			t.Fatalf("esc(%q) changed the page's structure: %q", s, page)
		}
		want := s
		if !utf8.ValidString(want) {
			want = strings.ToValidUTF8(want, "\uFFFD")
		}
		want = strings.NewReplacer("\x00", "\uFFFD", "\r\n", "\n", "\r", "\n").Replace(want)
		if got := text(ps[0]); got != want {
			t.Fatalf("text of esc(%q) reads %q, want %q", s, got, want)
		}
		if got := attr(ps[0], "title"); got != want {
			t.Fatalf("attribute of esc(%q) reads %q, want %q", s, got, want)
		}
	})
}

// FuzzParsePage: parsing never panics, and a page rendered with empty holes
// is its literal text.
func FuzzParsePage(f *testing.F) {
	for _, s := range []string{"", "{{.Who}}", "a{{.Who}}b{{.Who}}", "{{", "}}", "{{.Who", "{{{{.Who}}}}", "{{.}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePage(s, "t", "Who")
		if err != nil {
			return
		}
		var b strings.Builder
		if err := p.render(&b, nil); err != nil {
			t.Fatal(err)
		}
		if want := strings.ReplaceAll(s, "{{.Who}}", ""); b.String() != want {
			t.Fatalf("parsePage(%q) renders %q, want %q", s, b.String(), want)
		}
	})
}
