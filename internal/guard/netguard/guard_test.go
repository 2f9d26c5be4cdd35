package netguard

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

func TestGuardCheck(t *testing.T) {
	tests := []struct {
		name      string
		pol       Policy
		tool      string
		kind      action.Kind
		args      map[string]any
		wantCheck string // "" for no finding
		wantLevel action.Level
		wantURL   string
	}{
		{"public url", Policy{}, "WebFetch", action.KindNetFetch, map[string]any{"url": "https://example.com/a"}, "", 0, "https://example.com/a"},
		{"name left to the client", Policy{}, "WebFetch", action.KindNetFetch, map[string]any{"url": "http://127.0.0.1.nip.io/"}, "", 0, "http://127.0.0.1.nip.io/"},
		{"loopback", Policy{}, "WebFetch", action.KindNetFetch, map[string]any{"url": "http://127.0.0.1:8080/admin"}, "net.ssrf", action.Block, "http://127.0.0.1:8080/admin"},
		{"decimal metadata", Policy{}, "fetch", action.KindNetFetch, map[string]any{"url": "http://2852039166/latest/meta-data/"}, "net.ssrf", action.Block, "http://2852039166/latest/meta-data/"},
		{"uri argument", Policy{}, "mcp__web__get", action.KindNetFetch, map[string]any{"uri": "http://[::ffff:10.0.0.1]/"}, "net.ssrf", action.Block, "http://[::ffff:10.0.0.1]/"},
		{"localhost name", Policy{}, "WebFetch", action.KindNetFetch, map[string]any{"url": "http://api.localhost/"}, "net.ssrf", action.Block, "http://api.localhost/"},
		{"file scheme", Policy{}, "WebFetch", action.KindNetFetch, map[string]any{"url": "file:///etc/shadow"}, "net.scheme", action.Block, "file:///etc/shadow"},
		{"userinfo", Policy{}, "WebFetch", action.KindNetFetch, map[string]any{"url": "http://example.com@10.0.0.1/"}, "net.userinfo", action.Block, "http://example.com@10.0.0.1/"},
		{"unparseable", Policy{}, "WebFetch", action.KindNetFetch, map[string]any{"url": "http://[::1/"}, "net.url", action.Block, "http://[::1/"},
		{"no url", Policy{}, "WebFetch", action.KindNetFetch, map[string]any{"prompt": "x"}, "net.no-url", action.Approve, ""},
		{"url not a string", Policy{}, "WebFetch", action.KindNetFetch, map[string]any{"url": 42}, "net.no-url", action.Approve, ""},
		{"kind inferred from tool", Policy{}, "web_fetch", "", map[string]any{"url": "http://0x7f.1/"}, "net.ssrf", action.Block, "http://0x7f.1/"},
		{"allowed private host", Policy{AllowHosts: []string{"10.0.0.0/8"}}, "WebFetch", action.KindNetFetch, map[string]any{"url": "http://10.0.0.1/"}, "", 0, "http://10.0.0.1/"},
		{"other kinds ignored", Policy{}, "Bash", action.KindShell, map[string]any{"url": "http://127.0.0.1/"}, "", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &action.Action{Tool: tt.tool, Kind: tt.kind, Args: tt.args}
			fs, err := New(tt.pol).Check(context.Background(), a)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if tt.wantCheck == "" {
				if len(fs) != 0 {
					t.Fatalf("findings = %+v, want none", fs)
				}
			} else {
				if len(fs) != 1 {
					t.Fatalf("findings = %+v, want one %s", fs, tt.wantCheck)
				}
				f := fs[0]
				if f.Check != tt.wantCheck || f.Level != tt.wantLevel || !f.Hard || f.Message == "" {
					t.Fatalf("finding = %+v, want hard %s at %s with a message", f, tt.wantCheck, tt.wantLevel)
				}
			}
			if tt.wantURL == "" {
				if len(a.Facts.URLs) != 0 {
					t.Fatalf("Facts.URLs = %v, want none", a.Facts.URLs)
				}
			} else if !slices.Equal(a.Facts.URLs, []string{tt.wantURL}) {
				t.Fatalf("Facts.URLs = %v, want [%s]", a.Facts.URLs, tt.wantURL)
			}
		})
	}
}

func TestGuardMessageIsActionable(t *testing.T) {
	a := &action.Action{Tool: "WebFetch", Kind: action.KindNetFetch, Args: map[string]any{"url": "http://0177.0.0.1/"}}
	fs, err := New(Policy{}).Check(context.Background(), a)
	if err != nil || len(fs) != 1 {
		t.Fatalf("Check = %v, %v", fs, err)
	}
	for _, want := range []string{"127.0.0.1", "loopback", "allow_hosts"} {
		if !strings.Contains(fs[0].Message, want) {
			t.Errorf("message %q does not mention %q", fs[0].Message, want)
		}
	}
}

func TestGuardURLFactNotDuplicated(t *testing.T) {
	a := &action.Action{Tool: "WebFetch", Kind: action.KindNetFetch,
		Args: map[string]any{"url": "https://example.com/"}, Facts: action.Facts{URLs: []string{"https://example.com/"}}}
	if _, err := New(Policy{}).Check(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if len(a.Facts.URLs) != 1 {
		t.Fatalf("Facts.URLs = %v, want one entry", a.Facts.URLs)
	}
}

func TestGuardBadPolicyFailsClosed(t *testing.T) {
	g := New(Policy{AllowHosts: []string{"10.0.0.0/99"}})
	a := &action.Action{Tool: "WebFetch", Kind: action.KindNetFetch, Args: map[string]any{"url": "https://example.com/"}}
	fs, err := g.Check(context.Background(), a)
	if !errors.Is(err, ErrPolicy) {
		t.Fatalf("Check = %v, %v; want ErrPolicy so the engine fails closed", fs, err)
	}
	if g.Name() != "net" {
		t.Fatalf("Name = %q", g.Name())
	}
}

// A fetch tool that takes its URLs in its prompt (Gemini CLI's web_fetch)
// is judged by every URL the prompt holds: quiet for public ones, refused
// for any that is not, asked about when there is none (or too many).
func TestPromptURLs(t *testing.T) {
	many := strings.Repeat("https://example.com/a ", maxPromptURLs+1)
	tests := []struct {
		name, prompt string
		wantCheck    string
		wantLevel    action.Level
		wantURLs     []string
	}{
		{"one public", "Summarize https://go.dev/doc/effective_go and list its rules", "", 0, []string{"https://go.dev/doc/effective_go"}},
		{"two public, punctuation", "Compare https://arxiv.org/abs/2401.0001 and https://arxiv.org/abs/2401.0002.", "", 0,
			[]string{"https://arxiv.org/abs/2401.0001", "https://arxiv.org/abs/2401.0002."}},
		{"second is loopback", "Summarize https://example.com and http://127.0.0.1:8080/admin", "net.ssrf", action.Block,
			[]string{"https://example.com", "http://127.0.0.1:8080/admin"}},
		{"inside a word", "see:http://169.254.169.254/latest/meta-data/", "net.ssrf", action.Block,
			[]string{"http://169.254.169.254/latest/meta-data/"}},
		{"upper case", "read HTTP://10.0.0.1/", "net.ssrf", action.Block, []string{"HTTP://10.0.0.1/"}},
		{"no-break space ends a URL", "https://example.com\u00a0http://10.0.0.1/", "net.ssrf", action.Block,
			[]string{"https://example.com", "http://10.0.0.1/"}},
		// U+0085 is white space to Go, not to JavaScript: the agent reads
		// one URL, whose host is 10.0.0.1.
		{"next line is not an end", "https://example.com\u0085@10.0.0.1/", "net.url", action.Block,
			[]string{"https://example.com\u0085@10.0.0.1/"}},
		// U+FEFF is white space to JavaScript, not to Go: the agent reads two
		// URLs; the second is found where it begins.
		{"byte order mark", "https://example.com/x\ufeffhttp://10.0.0.1/", "net.ssrf", action.Block,
			[]string{"https://example.com/x\ufeffhttp://10.0.0.1/", "http://10.0.0.1/"}},
		{"inside another URL", "https://proxy.example/?u=http://127.0.0.1/", "net.ssrf", action.Block,
			[]string{"https://proxy.example/?u=http://127.0.0.1/", "http://127.0.0.1/"}},
		{"scheme alone", "what does http:// mean", "net.no-url", action.Approve, nil},
		{"no URL", "summarize the Go memory model", "net.no-url", action.Approve, nil},
		{"too many", many, "net.no-url", action.Approve, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &action.Action{Agent: "gemini", Tool: "web_fetch", Kind: action.KindNetFetch, Args: map[string]any{"prompt": tt.prompt}}
			fs, err := New(Policy{}).Check(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.wantCheck == "" && len(fs) != 0:
				t.Fatalf("findings %+v, want none", fs)
			case tt.wantCheck != "" && (len(fs) != 1 || fs[0].Check != tt.wantCheck || fs[0].Level != tt.wantLevel || !fs[0].Hard):
				t.Fatalf("findings %+v, want one hard %s at %s", fs, tt.wantCheck, tt.wantLevel)
			}
			if !slices.Equal(a.Facts.URLs, tt.wantURLs) {
				t.Fatalf("Facts.URLs = %q, want %q", a.Facts.URLs, tt.wantURLs)
			}
		})
	}
	// With a url argument (Claude Code's WebFetch) the prompt is the
	// local model's, not fetched.
	a := &action.Action{Tool: "WebFetch", Kind: action.KindNetFetch, Args: map[string]any{"url": "https://go.dev/", "prompt": "and http://127.0.0.1/"}}
	if fs, err := New(Policy{}).Check(context.Background(), a); err != nil || len(fs) != 0 {
		t.Fatalf("url and prompt: %+v %v", fs, err)
	}
}
