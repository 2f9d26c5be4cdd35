package web

// The console's three server-rendered pages (the sign-in form, the console
// shell and the page an approval link opens) are HTML files in assets/ with
// named holes, {{.Name}}, filled by Go code with escaped values or with
// fragments this file builds from escaped values. There is no template
// language: html/template evaluates fields and methods by reflection, and a
// reachable reflect.Value.MethodByName keeps every exported method of every
// type in the binary (the linker can no longer drop the unused ones), which
// cost the release binary about 4.5 MB. Every value reaches a page through
// esc, and every hole is in element text or in a double-quoted attribute
// value, where escaping & < > " ' is enough (the pages load no inline
// script, and the content security policy forbids it).

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/overseer-dev/overseer/internal/store"
)

// frag is HTML that may be written as it is: built only by esc and by the
// functions of this file from escaped parts.
type frag string

var htmlEscaper = strings.NewReplacer(
	"&", "&amp;",
	"<", "&lt;",
	">", "&gt;",
	`"`, "&#34;",
	"'", "&#39;",
	"\x00", "\uFFFD",
)

// esc makes s safe in element text and in a quoted attribute value. Invalid
// UTF-8 is replaced, as html/template does.
func esc(s string) frag {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return frag(htmlEscaper.Replace(s))
}

// page is a parsed page: lits[i] is followed by the hole holes[i]; the last
// literal has no hole after it.
type page struct {
	name  string
	lits  []string
	holes []string
}

// errPage reports a page file that is not well formed.
var errPage = errors.New("web: page")

// parsePage reads a page: literal HTML with holes {{.Name}}, where Name is
// one of names. Any other use of "{{" is an error, so that a left-over
// template action never reaches a browser as text ("}}" alone is text).
func parsePage(text, file string, names ...string) (*page, error) {
	p := &page{name: file}
	for {
		i := strings.Index(text, "{{")
		if i < 0 {
			p.lits = append(p.lits, text)
			return p, nil
		}
		lit := text[:i]
		rest := text[i+2:]
		j := strings.Index(rest, "}}")
		if j < 0 {
			return nil, fmt.Errorf("%w %s: an unclosed {{", errPage, file)
		}
		hole := rest[:j]
		name, ok := strings.CutPrefix(hole, ".")
		if !ok || !slices.Contains(names, name) {
			return nil, fmt.Errorf("%w %s: unknown hole {{%s}}", errPage, file, hole)
		}
		if err := holeContext(strings.Join(p.lits, "") + lit); err != nil {
			return nil, fmt.Errorf("%w %s: {{%s}} %v", errPage, file, hole, err)
		}
		p.lits = append(p.lits, lit)
		p.holes = append(p.holes, name)
		text = rest[j+2:]
	}
}

// urlOrCodeAttrs are attributes whose value is a URL, script or style:
// escaping HTML is not enough there (javascript: URLs, expressions).
var urlOrCodeAttrs = []string{"href", "src", "action", "formaction", "style", "srcdoc", "srcset", "poster",
	"background", "cite", "data", "xlink:href", "ping", "manifest", "http-equiv"}

// holeContext refuses a hole where esc would not make a value safe: inside
// a script or style element, in an unquoted attribute value, or in an
// attribute that holds a URL, script or style. before is the page's text
// before the hole. It is a conservative check of the pages we write, not
// an HTML parser.
func holeContext(before string) error {
	low := strings.ToLower(before)
	for _, el := range []string{"script", "style"} {
		if strings.LastIndex(low, "<"+el) > strings.LastIndex(low, "</"+el) {
			return fmt.Errorf("is inside a %s element", el)
		}
	}
	if strings.LastIndex(low, "<!--") > strings.LastIndex(low, "-->") {
		return errors.New("is inside a comment")
	}
	lt, gt := strings.LastIndexByte(low, '<'), strings.LastIndexByte(low, '>')
	if lt <= gt {
		return nil // element text
	}
	tag := low[lt:]
	q := strings.LastIndex(tag, `="`)
	if q < 0 || strings.Count(tag[q+2:], `"`) != 0 {
		return errors.New("is not inside a double-quoted attribute value")
	}
	f := strings.Fields(tag[:q])
	if len(f) < 2 {
		return errors.New("is not inside an attribute value")
	}
	attr := f[len(f)-1]
	if strings.HasPrefix(attr, "on") || slices.Contains(urlOrCodeAttrs, attr) {
		return fmt.Errorf("is in the %s attribute, which holds a URL, script or style", attr)
	}
	return nil
}

// loadPage parses the page file name in fsys.
func loadPage(read func(string) ([]byte, error), file string, names ...string) (*page, error) {
	b, err := read(file)
	if err != nil {
		return nil, err
	}
	return parsePage(string(b), file, names...)
}

// render writes the page with its holes filled from vals (a missing value
// is empty).
func (p *page) render(w io.Writer, vals map[string]frag) error {
	var b strings.Builder
	for i, lit := range p.lits {
		b.WriteString(lit)
		if i < len(p.holes) {
			b.WriteString(string(vals[p.holes[i]]))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// pages are the console's parsed pages.
type pages struct {
	login, app, link *page
}

func loadPages(read func(string) ([]byte, error)) (*pages, error) {
	var ps pages
	var err error
	if ps.login, err = loadPage(read, "assets/login.tmpl", "Insecure", "Error", "Who"); err != nil {
		return nil, err
	}
	if ps.app, err = loadPage(read, "assets/app.tmpl", "CSRF", "Who", "Banners"); err != nil {
		return nil, err
	}
	if ps.link, err = loadPage(read, "assets/link.tmpl", "Title", "Message", "Approval", "Answer"); err != nil {
		return nil, err
	}
	return &ps, nil
}

// loginVals fills the sign-in page.
func loginVals(who, msg string, insecure bool) map[string]frag {
	v := map[string]frag{"Who": esc(who)}
	if insecure {
		v["Insecure"] = `<p class="banner warn">This page is reached over the network without TLS: the token you type can be read on the way.</p>`
	}
	if msg != "" {
		v["Error"] = `<p class="banner error" role="alert">` + esc(msg) + `</p>`
	}
	return v
}

// appVals fills the console's page.
func appVals(csrf, who string, insecure bool, unaudited []string, pendingKey bool) map[string]frag {
	var b strings.Builder
	if insecure {
		b.WriteString(`<div class="banner warn">This console is reached over the network without TLS: anyone on the way can read it. Restart the daemon with --tls-cert and --tls-key.</div>` + "\n")
	}
	if len(unaudited) > 0 {
		b.WriteString(`<div class="banner warn" id="unaudited-banner"><strong>Changed outside Overseer:</strong> these have no audited record behind them and are refused (run <code>overseer audit verify</code>):<ul>`)
		for _, u := range unaudited {
			b.WriteString("<li>" + string(esc(u)) + "</li>")
		}
		b.WriteString("</ul></div>\n")
	}
	if pendingKey {
		b.WriteString(`<div class="banner warn" id="pending-key-banner">The audit log's verification key is still in Overseer's home: until you move it elsewhere (<code>overseer audit key --out FILE</code>) the seal proves nothing.</div>` + "\n")
	}
	return map[string]frag{"CSRF": esc(csrf), "Who": esc(who), "Banners": frag(b.String())}
}

// linkVals fills the page an approval link opens. now is for the ages.
func linkVals(v linkView, now time.Time) map[string]frag {
	vals := map[string]frag{"Title": esc(v.Title)}
	if v.Message != "" {
		vals["Message"] = `<p id="link-message">` + esc(v.Message) + `</p>`
	}
	if a := v.Approval; a != nil {
		vals["Approval"] = approvalFacts(a, now)
	}
	if v.Token != "" && !v.Done {
		var b strings.Builder
		b.WriteString(`<form method="post" class="answer">` + "\n")
		b.WriteString(`      <input type="hidden" name="decision" value="` + string(esc(v.Claims.Decision)) + `">` + "\n")
		if v.Claims.Decision == "deny" {
			b.WriteString(`      <label for="reason">Reason or instruction for the agent</label>
      <textarea id="reason" name="reason" rows="3" maxlength="2000" placeholder="use ./build instead"></textarea>
      <button type="submit" class="deny" id="link-submit">Deny</button>` + "\n")
		} else {
			b.WriteString(`      <button type="submit" class="approve" id="link-submit">Approve</button>` + "\n")
		}
		b.WriteString(`      <p class="hint">This link works once`)
		if v.Claims.Who != "" {
			b.WriteString(" and records the answer as " + string(esc(v.Claims.Who)))
		}
		b.WriteString(".</p>\n    </form>")
		vals["Answer"] = frag(b.String())
	}
	return vals
}

// approvalFacts is what the link page shows of the approval: the tool, its
// level, where it runs, who asks, why, the arguments and the preview.
func approvalFacts(a *store.Approval, now time.Time) frag {
	var b strings.Builder
	w := func(parts ...frag) {
		for _, p := range parts {
			b.WriteString(string(p))
		}
	}
	lvl := esc(a.Level.String())
	w(`<dl class="facts">`+"\n", `      <dt>Tool</dt><dd><code>`, esc(a.Tool), `</code> <span class="lvl lvl-`, lvl, `">`, lvl, "</span></dd>\n")
	w(`      <dt>Runs in</dt><dd class="cwd" id="link-cwd">`)
	if a.Action.Cwd != "" {
		w(`<code>`, esc(a.Action.Cwd), `</code>`)
	} else {
		w(`<span class="hint">the agent did not say</span>`)
	}
	w("</dd>\n")
	if a.Agent != "" {
		w(`      <dt>Agent</dt><dd>`, esc(a.Agent))
		if a.Session != "" {
			w(` · session `, esc(a.Session))
		}
		w("</dd>\n")
	}
	w(`      <dt>Why</dt><dd>`, esc(a.Verdict.Summary()), "</dd>\n")
	until := a.Deadline.Sub(now).Round(time.Second)
	left := "passed"
	if until >= 0 {
		left = until.String()
	}
	w(`      <dt>Asked</dt><dd>`, esc(now.Sub(a.CreatedAt).Round(time.Second).String()), ` ago · times out in `,
		esc(left), ` (`, esc(a.DefaultDecision), ")</dd>\n    </dl>\n")
	w(`    <h2>Arguments</h2>`+"\n", `    <pre class="args">`)
	keys := make([]string, 0, len(a.Action.Args))
	for k := range a.Action.Args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w(esc(k), ": ", esc(fmt.Sprintf("%v", a.Action.Args[k])), "\n")
	}
	w("</pre>\n")
	if p := a.Verdict.Preview; p != nil {
		w(`    <h2>What it would do</h2>`+"\n", `    <p>`, esc(p.Summary), "</p>\n")
		if len(p.Items) > 0 {
			w(`    <ul class="items">`)
			for _, it := range p.Items {
				w(`<li><code>`, esc(it), `</code></li>`)
			}
			w(`</ul>`)
			if p.More != 0 {
				w(`<p class="hint">and `, esc(fmt.Sprint(p.More)), ` more</p>`)
			}
			w("\n")
		}
		if p.Diff != "" {
			w(`    <pre class="diff">`, esc(p.Diff), "</pre>\n")
		}
	}
	return frag(b.String())
}
