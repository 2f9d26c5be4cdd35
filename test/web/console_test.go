package webe2e

import (
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/internal/proc"
)

var screenshots = flag.Bool("screenshots", false, "write a screenshot of every page into docs/screenshots")

func shotDir(t *testing.T) string {
	dir := filepath.Join(overseertest.ModuleRoot(t), "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBrowserAnswers: the console, open before the action arrives, shows
// it live; a click approves it and the agent's waiting call is released;
// the keyboard denies the next one with an instruction for the agent.
func TestBrowserAnswers(t *testing.T) {
	needBrowser(t)
	d := overseertest.StartDaemon(t, newHome(t, map[string]string{}))
	dr := startDriver(t, d)

	call := callAndWait(d, "prod")
	dr.send("APPROVE")
	id := dr.expect("SEEN")
	// The card says where the action runs, prominently: above the command,
	// in large type; and for whom, and how long it has waited.
	var c card
	if err := json.Unmarshal([]byte(dr.expect("CARD")), &c); err != nil {
		t.Fatal(err)
	}
	if c.ID != id || c.Cwd != cwdOf("prod") || !c.CwdVisible || !c.CwdAboveCommand || c.CwdFontPx < 15 ||
		!strings.Contains(c.Meta, "agent e2e-agent") || !strings.Contains(c.Meta, "session s-e2e") || !strings.Contains(c.Clock, "waiting") {
		t.Fatalf("the approval card: %+v", c)
	}
	if got := dr.expect("DONE"); got != id {
		t.Fatalf("answered %s, saw %s", got, id)
	}
	o := released(t, call)
	if o.Decision != "allow" || !strings.Contains(o.Reason, "approved by alice via web") {
		t.Fatalf("outcome %+v", o)
	}

	call = callAndWait(d, "staging")
	dr.send("DENY use ./build instead")
	dr.expect("SEEN")
	dr.expect("DONE")
	o = released(t, call)
	if o.Decision != "deny" || !strings.Contains(o.Reason, "use ./build instead") {
		t.Fatalf("outcome %+v", o)
	}

	// The audit view shows each answer, and who gave it — not the level of
	// the request it answered.
	dr.send("AUDIT")
	var rows []struct {
		Summary, Badge string
		Level          bool
	}
	if err := json.Unmarshal([]byte(dr.expect("AUDIT")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Badge != "denied · alice via web" || rows[1].Badge != "approved · alice via web" ||
		rows[0].Level || rows[1].Level || !strings.Contains(rows[0].Summary, "use ./build instead") {
		t.Fatalf("answer rows: %+v", rows)
	}

	if *screenshots {
		populate(t, d)
		dr.send("SHOTS " + shotDir(t))
		dr.expect("DONE shots")
	}
}

// card is what the driver reads of an approval card.
type card struct {
	ID              string  `json:"id"`
	Cwd             string  `json:"cwd"`
	CwdVisible      bool    `json:"cwdVisible"`
	CwdAboveCommand bool    `json:"cwdAboveCommand"`
	CwdFontPx       float64 `json:"cwdFontPx"`
	Meta            string  `json:"meta"`
	Clock           string  `json:"clock"`
}

// TestBrowserOnAPhone: on a phone-sized screen the approval card still
// shows where the action runs, its answer buttons are at least 44 pixels
// high, nothing spills sideways, and no keyboard hint is shown.
func TestBrowserOnAPhone(t *testing.T) {
	needBrowser(t)
	d := overseertest.StartDaemon(t, newHome(t, map[string]string{}))
	dr := startDriver(t, d)
	call := callAndWait(d, "phone")
	dr.send("PHONEQUEUE")
	var got struct {
		Buttons []struct {
			Text   string  `json:"text"`
			Height float64 `json:"height"`
			Right  float64 `json:"right"`
		} `json:"buttons"`
		KeyHints    []string `json:"keyHints"`
		Placeholder string   `json:"placeholder"`
		Overflow    float64  `json:"overflow"`
		Card        card     `json:"card"`
	}
	if err := json.Unmarshal([]byte(dr.expect("PHONEQUEUE")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Buttons) != 3 {
		t.Fatalf("buttons %+v", got.Buttons)
	}
	for _, b := range got.Buttons {
		if b.Height < 44 || b.Right > 390 || strings.Contains(b.Text, "(") {
			t.Errorf("button %+v: want at least 44 px high, on the screen, without a key hint", b)
		}
	}
	if len(got.KeyHints) > 0 || strings.Contains(got.Placeholder, "Enter") || got.Overflow > 0 {
		t.Errorf("keyboard hints %q, placeholder %q, overflow %v px", got.KeyHints, got.Placeholder, got.Overflow)
	}
	if got.Card.Cwd != cwdOf("phone") || !got.Card.CwdVisible || !got.Card.CwdAboveCommand {
		t.Errorf("card %+v", got.Card)
	}
	id := pendingID(t, d, "phone")
	if r := overseertest.Run(t, d.Home, "", "deny", id); r.Code != 0 {
		t.Fatalf("deny: %d %s", r.Code, r.Stderr)
	}
	released(t, call)
}

// TestBrowserDropsWithdrawn: a request whose caller stops waiting leaves
// the open console by itself.
func TestBrowserDropsWithdrawn(t *testing.T) {
	needBrowser(t)
	d := overseertest.StartDaemon(t, newHome(t, map[string]string{}))
	dr := startDriver(t, d)
	st, body := d.Do(t, "POST", "/api/v1/actions", map[string]any{"tool": "deploy", "agent": "script", "session": "s-1",
		"cwd": "/srv", "args": map[string]any{"target": "brief"}, "asker": map[string]any{"kind": "api", "wait": "3s"}}, false)
	if st != 200 {
		t.Fatalf("%d %s", st, body)
	}
	id := pendingID(t, d, "brief")
	dr.send("GONE " + id)
	dr.expect("GONE " + id)
	st, body = d.Do(t, "GET", "/api/v1/approvals/"+id, nil, true)
	if st != 200 || !strings.Contains(string(body), `"status":"withdrawn"`) {
		t.Fatalf("%d %s", st, body)
	}
}

// selfAsker names this test process as the hook that holds a call: it runs
// as long as the screenshots are taken, so the request stays.
func selfAsker() map[string]any {
	id, _ := proc.Self()
	return map[string]any{"kind": "hook", "pid": id.PID, "start": id.Start, "host": id.Host}
}

// populate fills the daemon with requests and history for screenshots.
func populate(t *testing.T, d *overseertest.Daemon) {
	t.Helper()
	for _, a := range []map[string]any{
		{"tool": "Bash", "agent": "claude-code", "session": "s-42", "cwd": "/home/ann/src/shop/web",
			"args": map[string]any{"command": "rm -rf ./tmp_* build dist"}, "asker": selfAsker()},
		{"tool": "deploy", "agent": "codex", "session": "s-7", "cwd": "/home/ann/src/shop", "args": map[string]any{"target": "production"}},
		{"tool": "Bash", "agent": "claude-code", "session": "s-42", "cwd": "/home/ann/src/shop/web",
			"args": map[string]any{"command": "git push --force origin main"}},
		{"tool": "delete_file", "agent": "gemini", "session": "s-3", "args": map[string]any{"path": "/srv/app/config.yaml"}},
	} {
		if st, body := d.Do(t, "POST", "/api/v1/actions", a, false); st != 200 {
			t.Fatalf("%d %s", st, body)
		}
	}
	// A caller that gave up: its request is withdrawn, and the audit says so.
	key := "populate-withdraw-key-0123456789"
	st, body := d.Do(t, "POST", "/api/v1/actions", map[string]any{"tool": "deploy", "agent": "codex", "session": "s-7",
		"cwd": "/home/ann/src/shop", "args": map[string]any{"target": "staging"}, "asker": map[string]any{"kind": "api", "key": key}}, false)
	var o outcome
	if st != 200 || json.Unmarshal(body, &o) != nil || o.ActionID == "" {
		t.Fatalf("%d %s", st, body)
	}
	if st, body := d.Do(t, "POST", "/api/v1/actions/"+o.ActionID+"/withdraw",
		map[string]any{"key": key, "reason": "the agent was interrupted"}, false); st != 200 {
		t.Fatalf("withdraw: %d %s", st, body)
	}
	for _, a := range []map[string]any{
		{"tool": "Read", "agent": "claude-code", "cwd": "/home/ann/src/shop", "args": map[string]any{"file_path": "README.md"}},
		{"tool": "WebFetch", "agent": "claude-code", "args": map[string]any{"url": "https://go.dev/doc"}},
	} {
		d.Do(t, "POST", "/api/v1/actions", a, false)
	}
}

// TestNotificationLinks: a webhook on loopback receives the request with
// approve and deny links; following the approve link (a GET shows, a POST
// answers) releases the agent, once; the deny link of the next request is
// used in a browser without a session.
func TestNotificationLinks(t *testing.T) {
	got := make(chan map[string]any, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p map[string]any
		json.NewDecoder(r.Body).Decode(&p)
		got <- p
	}))
	defer hook.Close()
	home := newHome(t, map[string]string{"notify.yaml": "channels:\n  - type: webhook\n    name: phone\n    url: " + hook.URL + "\n"})
	d := overseertest.StartDaemon(t, home)

	var links func() (approve, deny string)
	links = func() (approve, deny string) {
		t.Helper()
		select {
		case p := <-got:
			if p["event"] == "audit_head" {
				return links() // a published audit head, not a request
			}
			l, _ := p["links"].(map[string]any)
			approve, _ = l["approve"].(string)
			deny, _ = l["deny"].(string)
			if !strings.HasPrefix(approve, "http://"+d.Addr+"/ui/a/") || !strings.HasPrefix(deny, "http://"+d.Addr+"/ui/a/") {
				t.Fatalf("links %v", l)
			}
			return approve, deny
		case <-time.After(30 * time.Second):
			t.Fatalf("no notification arrived:\n%s", d.Log())
		}
		return "", ""
	}

	call := callAndWait(d, "prod")
	approve, _ := links()
	resp, err := http.Get(approve)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "Approve this action?") {
		t.Fatalf("link page: %d %s", resp.StatusCode, page)
	}
	post := func(link, decision string) (int, string) {
		resp, err := http.PostForm(link, url.Values{"decision": {decision}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := post(approve, "approve"); st != 200 || !strings.Contains(body, "Answered: approved") {
		t.Fatalf("answer through the link: %d %s", st, body)
	}
	o := released(t, call)
	if o.Decision != "allow" || !strings.Contains(o.Reason, "approved by phone via link") {
		t.Fatalf("outcome %+v", o)
	}
	if st, body := post(approve, "approve"); st != http.StatusGone || !strings.Contains(body, "used already") {
		t.Fatalf("second use: %d %s", st, body)
	}

	t.Run("in a browser", func(t *testing.T) {
		needBrowser(t)
		dr := startDriver(t, d)
		call := callAndWait(d, "staging")
		_, deny := links()
		shot := ""
		if *screenshots {
			shot = filepath.Join(shotDir(t), "link.png")
		}
		dr.send(strings.TrimSpace("LINK " + deny + " " + shot))
		if title := dr.expect("DONE"); title != "Answered: denied" {
			t.Fatalf("page title %q", title)
		}
		if o := released(t, call); o.Decision != "deny" {
			t.Fatalf("outcome %+v", o)
		}
	})
}

// TestCLIAnswers: `overseer approve` and `overseer deny` release the agent.
func TestCLIAnswers(t *testing.T) {
	home := newHome(t, map[string]string{})
	d := overseertest.StartDaemon(t, home)
	for _, tc := range []struct {
		name, target string
		args         []string
		decision     string
		reason       string
	}{
		{"approve", "prod", []string{"approve"}, "allow", "approved by"},
		{"deny with a reason", "staging", []string{"deny", "--reason", "use ./build instead"}, "deny", "use ./build instead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := callAndWait(d, tc.target)
			id := pendingID(t, d, tc.target)
			res := overseertest.Run(t, home, "", append(tc.args, id)...)
			if res.Code != 0 {
				t.Fatalf("exit %d: %s %s", res.Code, res.Stdout, res.Stderr)
			}
			o := released(t, call)
			if o.Decision != tc.decision || !strings.Contains(o.Reason, tc.reason) || !strings.Contains(o.Reason, "via cli") {
				t.Fatalf("outcome %+v", o)
			}
		})
	}
}

// TestTUIAnswers drives `overseer tui` in a real tmux.
func TestTUIAnswers(t *testing.T) {
	_, err := exec.LookPath("tmux")
	need(t, "tmux", err == nil)
	home := newHome(t, map[string]string{})
	d := overseertest.StartDaemon(t, home)
	tmux, screen := startTUI(t, home, 140)
	screen("0 waiting")

	call := callAndWait(d, "prod")
	screen("target=prod")
	tmux("send-keys", "-t", "tui", "a")
	o := released(t, call)
	if o.Decision != "allow" || !strings.Contains(o.Reason, "approved by tess via tui") {
		t.Fatalf("outcome %+v", o)
	}
	screen(": approved")

	call = callAndWait(d, "staging")
	screen("target=staging")
	tmux("send-keys", "-t", "tui", "d")
	screen("reason or instruction for the agent")
	tmux("send-keys", "-t", "tui", "-l", "use ./build instead")
	tmux("send-keys", "-t", "tui", "Enter")
	o = released(t, call)
	if o.Decision != "deny" || !strings.Contains(o.Reason, "use ./build instead") {
		t.Fatalf("outcome %+v", o)
	}
	screen("deny by tess via tui")
	// The queue empties when the answer's reply comes back, which can be a
	// moment after its record shows in the tail (records are visible once
	// committed, the reply waits for the disk).
	screen("0 waiting")
	tmux("send-keys", "-t", "tui", "q")
}

// TestTUIControls drives `overseer tui` in a real tmux through the views
// of unattended hours: R lists an auto-rule and E turns it off through the
// daemon (audited as the person), l shows a rate limit's and a budget
// cap's use against the limit.
func TestTUIControls(t *testing.T) {
	_, err := exec.LookPath("tmux")
	need(t, "tmux", err == nil)
	home := newHome(t, map[string]string{})
	d := overseertest.StartDaemon(t, home)
	code, body := d.Do(t, "POST", "/api/v1/auto-rules", map[string]any{"name": "no prod at night",
		"trigger": map[string]any{"type": "pattern_match", "text": "prod"}, "action": map[string]any{"type": "require_approval"}}, true)
	var rule struct {
		ID string `json:"id"`
	}
	if code != 201 || json.Unmarshal(body, &rule) != nil {
		t.Fatalf("auto-rule: %d %s", code, body)
	}
	if code, body := d.Do(t, "POST", "/api/v1/budget/caps", map[string]any{"name": "daily spend", "max_cost_usd": 2}, true); code != 201 {
		t.Fatalf("budget cap: %d %s", code, body)
	}
	if code, body := d.Do(t, "POST", "/api/v1/rate-limits", map[string]any{"name": "few deploys", "tool": "deploy",
		"max_calls": 10, "window_seconds": 3600, "action_on_limit": "block"}, true); code != 201 {
		t.Fatalf("rate limit: %d %s", code, body)
	}
	tmux, screen := startTUI(t, home, 160)
	screen("0 waiting")
	tmux("send-keys", "-t", "tui", "R")
	screen("● no prod at night")
	tmux("send-keys", "-t", "tui", "E")
	screen("○ no prod at night")
	code, body = d.Do(t, "GET", "/api/v1/auto-rules/"+rule.ID, nil, true)
	var got struct {
		Enabled bool `json:"enabled"`
	}
	if code != 200 || json.Unmarshal(body, &got) != nil || got.Enabled {
		t.Fatalf("the rule after E: %d %s", code, body)
	}
	tmux("send-keys", "-t", "tui", "Escape")
	screen("Waiting for you")
	// A call counted by the limit, and spend reported for the cap.
	if code, body := d.Do(t, "POST", "/api/v1/actions", map[string]any{"tool": "deploy", "agent": "codex",
		"args": map[string]any{"target": "qa"}}, false); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	tmux("send-keys", "-t", "tui", "l")
	s := screen("1/10")
	for _, want := range []string{"few deploys", "at most 10 in 1h0m0s → block", "daily spend", "global, daily: $2.00 → stop"} {
		if !strings.Contains(s, want) {
			t.Fatalf("the limits view lacks %q:\n%s", want, s)
		}
	}
	tmux("send-keys", "-t", "tui", "q")
}

// TestServeAnnouncesConsole: `overseer serve` prints the console's address;
// listening on loopback only, it prints no QR code (no phone can reach it).
func TestServeAnnouncesConsole(t *testing.T) {
	d := overseertest.StartDaemon(t, newHome(t, map[string]string{}))
	want := "console:   http://" + d.Addr + "/ui/"
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(d.Log(), "loopback") {
		time.Sleep(50 * time.Millisecond)
	}
	log := d.Log()
	// The console's announcement, not the audit log's verification key
	// (shown once, with its own QR code, on the first start).
	part := log
	if i := strings.Index(log, want); i >= 0 {
		part = log[i:]
		if j := strings.Index(part, "\n\n"); j >= 0 {
			part = part[:j]
		}
	}
	if !strings.Contains(log, want) || strings.Contains(part, "█") || strings.Contains(part, "▀") || !strings.Contains(part, "no QR code") {
		t.Fatalf("the daemon did not announce the console (without a QR code):\n%s", log)
	}
	st, body := d.Do(t, "GET", "/", nil, false)
	if st != 200 || !strings.Contains(string(body), "Daemon token") {
		t.Fatalf("/ does not lead to the console's sign-in: %d", st)
	}
}

// TestBrowserAcceptsProposal: after three approvals of one kind of call,
// the Policy page shows the proposed rule with its dry run, and a click
// accepts it: the next such call runs at once.
func TestBrowserAcceptsProposal(t *testing.T) {
	needBrowser(t)
	d := overseertest.StartDaemon(t, newHome(t, map[string]string{}))
	act := func(cmd string) outcome {
		t.Helper()
		code, body := d.Do(t, "POST", "/api/v1/actions", map[string]any{"tool": "Bash", "agent": "claude-code",
			"session": "s1", "cwd": "/tmp/web-app", "args": map[string]any{"command": cmd}}, false)
		var o outcome
		if code != 200 || json.Unmarshal(body, &o) != nil {
			t.Fatalf("submit %q: %d %s", cmd, code, body)
		}
		return o
	}
	for _, cmd := range []string{"mytool deploy alpha", "mytool deploy beta", "mytool deploy gamma"} {
		o := act(cmd)
		if o.Approval == nil {
			t.Fatalf("%q was not put to a person: %+v", cmd, o)
		}
		if r := overseertest.Run(t, d.Home, "", "approve", o.Approval.ID, "--who", "alice"); r.Code != 0 {
			t.Fatalf("approve: %s", r.Stderr)
		}
	}
	dr := startDriver(t, d)
	shot := ""
	if *screenshots {
		shot = filepath.Join(shotDir(t), "proposals.png")
	}
	dr.send("PROPOSALS " + shot)
	if shot != "" {
		dr.expect("SHOT")
	}
	var got struct{ Title, Dry, Empty string }
	if err := json.Unmarshal([]byte(dr.expect("ACCEPTED")), &got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Title, "mytool deploy <name> in /tmp/web-app") || !strings.Contains(got.Dry, "would have saved 3 prompt(s)") ||
		!strings.Contains(got.Empty, "No rule is proposed") {
		t.Fatalf("the page showed %+v", got)
	}
	if o := act("mytool deploy delta"); o.Decision != "allow" {
		t.Fatalf("after accepting: %+v", o)
	}
}

// TestBrowserShowsAlarm: over its database size alarm threshold the daemon
// raises an alarm, and the console shows it as a banner on every page.
func TestBrowserShowsAlarm(t *testing.T) {
	needBrowser(t)
	home := newHome(t, map[string]string{})
	policy := testPolicy + "settings:\n  limits:\n    database_alarm_bytes: 4096\n"
	if err := os.WriteFile(filepath.Join(home, "policy.yaml"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	d := overseertest.StartDaemon(t, home)
	dr := startDriver(t, d)
	shot := filepath.Join(t.TempDir(), "alarm.png")
	if *screenshots {
		shot = filepath.Join(shotDir(t), "alarm.png")
	}
	dr.send("ALARM " + shot)
	dr.expect("SHOT")
	got := dr.expect("ALARM")
	if !strings.Contains(got, "Alarm:") || !strings.Contains(got, "alarm threshold of 4.0 KiB") ||
		!strings.Contains(got, "settings.limits.database_alarm_bytes") {
		t.Fatalf("the banner says %q", got)
	}
}
