package builtin

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"golang.org/x/net/html"

	"github.com/overseer-dev/overseer/internal/guard/netguard"
	"github.com/overseer-dev/overseer/plugin"
)

// webClient is what web_fetch sends requests with.
type webClient interface {
	Do(req *http.Request) (*http.Response, error)
}

// newWebClient returns the net guard's safe client: every address is
// checked when the connection is made, redirects (at most 5) are checked
// again, the body is capped.
func newWebClient(cfg Config) webClient {
	return netguard.NewClient(cfg.Net, netguard.ClientOptions{
		MaxRedirects: netguard.DefaultMaxRedirects,
		MaxBodyBytes: cfg.WebMaxBytes,
	})
}

type fetchArgs struct {
	URL string `json:"url"`
}

func (t *Tools) webFetch(ctx context.Context, c plugin.Call) (plugin.Result, error) {
	var args fetchArgs
	if err := decodeArgs(c.Args, &args); err != nil {
		return plugin.Result{}, err
	}
	if args.URL == "" {
		return plugin.Result{}, errors.New("url is empty")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return plugin.Result{}, fmt.Errorf("invalid url: %w", err)
	}
	req.Header.Set("User-Agent", "overseer-web-fetch/1")
	req.Header.Set("Accept", "text/html, text/plain, application/json, application/xml;q=0.9, */*;q=0.5")
	resp, err := t.web.Do(req)
	if err != nil {
		if errors.Is(err, netguard.ErrRefused) {
			return plugin.Result{}, fmt.Errorf("refused: %w (agents may only fetch public addresses)", err)
		}
		return plugin.Result{}, err
	}
	defer resp.Body.Close()
	body, truncated, err := netguard.ReadCapped(resp.Body, t.cfg.WebMaxBytes)
	if err != nil {
		return plugin.Result{}, fmt.Errorf("reading the response: %w", err)
	}
	meta := map[string]any{"url": resp.Request.URL.String(), "status": resp.StatusCode,
		"content_type": resp.Header.Get("Content-Type"), "bytes": len(body)}
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var text string
	switch {
	case ctype == "text/html" || ctype == "application/xhtml+xml":
		text = htmlText(string(body))
	case strings.HasPrefix(ctype, "text/") || ctype == "application/json" || strings.HasSuffix(ctype, "+json") ||
		ctype == "application/xml" || strings.HasSuffix(ctype, "+xml") || ctype == "application/javascript" || ctype == "":
		text = string(body)
	default:
		return plugin.Result{Output: fmt.Sprintf("%s returned %s (%d bytes), which is not text; it is not shown", meta["url"], ctype, len(body)),
			Meta: meta, IsError: true}, nil
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "URL: %s\nStatus: %s\n", meta["url"], resp.Status)
	if truncated {
		meta["body_truncated"] = true
		fmt.Fprintf(&sb, "[warning: the body was cut at %d bytes]\n", t.cfg.WebMaxBytes)
	}
	sb.WriteString("\n")
	sb.WriteString(text)
	res := plugin.Result{Output: capOutput(sb.String(), t.cfg.MaxOutputBytes, meta), Meta: meta}
	if resp.StatusCode >= 400 {
		res.IsError = true
	}
	return res, nil
}

// htmlText extracts the readable text of an HTML document: text nodes
// outside script, style and similar, with block elements on their own
// lines.
func htmlText(doc string) string {
	z := html.NewTokenizer(strings.NewReader(doc))
	var sb strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return collapseBlank(sb.String())
		case html.StartTagToken, html.SelfClosingTagToken:
			tt := z.Token()
			switch tt.Data {
			case "script", "style", "noscript", "template", "svg", "head":
				if tt.Type == html.StartTagToken {
					skip++
				}
			case "br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "section", "article", "table":
				sb.WriteString("\n")
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "noscript", "template", "svg", "head":
				if skip > 0 {
					skip--
				}
			case "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "section", "article", "table":
				sb.WriteString("\n")
			}
		case html.TextToken:
			if skip == 0 {
				sb.Write(z.Text())
			}
		}
	}
}

// collapseBlank trims each line and drops runs of blank lines.
func collapseBlank(s string) string {
	var out []string
	blank := false
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(strings.Join(strings.Fields(l), " "))
		if l == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
