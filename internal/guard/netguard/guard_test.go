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
