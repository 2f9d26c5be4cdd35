package webe2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// TestBrowserGrants: on the Delegation page a person issues a grant with
// the form and revokes it with a click; the CLI sees both.
func TestBrowserGrants(t *testing.T) {
	needBrowser(t)
	d := overseertest.StartDaemon(t, newHome(t, map[string]string{}))
	dr := startDriver(t, d)
	docs := t.TempDir()
	shot := ""
	if *screenshots {
		shot = filepath.Join(shotDir(t), "delegation.png")
	}
	dr.send("GRANT " + docs + " " + shot)
	if shot != "" {
		dr.expect("SHOT")
	}
	var got struct{ Row, After string }
	if err := json.Unmarshal([]byte(dr.expect("GRANTED")), &got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Row, "claude-code sub-agents") || !strings.Contains(got.Row, "file_read read-only under "+docs) ||
		!strings.Contains(got.Row, "0/4 steps") || !strings.Contains(got.Row, "issued by alice (web)") || !strings.Contains(got.After, "No grant") {
		t.Fatalf("the page showed %+v", got)
	}
	r := overseertest.Run(t, d.Home, "", "grant", "list", "--all", "--json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"by": "alice"`) || !strings.Contains(r.Stdout, `"channel": "web"`) {
		t.Fatalf("grant list: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
}
