package channelse2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/notify/notifytest"
	"github.com/overseer-dev/overseer/internal/overseertest"
)

// outcome is what a waiting agent learns.
type outcome struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	err      error
}

// hold submits a shell command the way an agent does and holds the call
// while a person decides; the outcome arrives on the channel.
func hold(d *overseertest.Daemon, cwd, command string) <-chan outcome {
	out := make(chan outcome, 1)
	go func() { // ends when the daemon answers (at most its wait)
		body, _ := json.Marshal(map[string]any{"tool": "Bash", "agent": "claude-code", "session": "s-e2e",
			"cwd": cwd, "args": map[string]any{"command": command}})
		resp, err := http.Post(d.URL("/api/v1/actions?wait=60s"), "application/json", bytes.NewReader(body))
		if err != nil {
			out <- outcome{err: err}
			return
		}
		defer resp.Body.Close()
		var o outcome
		o.err = json.NewDecoder(resp.Body).Decode(&o)
		out <- o
	}()
	return out
}

func released(t *testing.T, d *overseertest.Daemon, ch <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatalf("the waiting call failed: %v", o.err)
		}
		return o
	case <-time.After(60 * time.Second):
		t.Fatalf("the waiting call was not released:\n%s", d.Log())
	}
	return outcome{}
}

func buttons(t *testing.T, m *notifytest.TGMessage) (approve, deny string) {
	t.Helper()
	for _, row := range m.Buttons {
		for _, b := range row {
			switch b.Text {
			case "Approve":
				approve = b.Data
			case "Deny":
				deny = b.Data
			}
		}
	}
	if approve == "" || deny == "" {
		t.Fatalf("buttons %+v", m.Buttons)
	}
	return approve, deny
}

// TestTelegramEndToEnd: the daemon, on loopback only, sends a held
// `rm -rf ./tmp_*` to a Telegram chat (a scripted Bot API); a stranger's
// press is refused; the allow-listed user's Approve releases the agent,
// whose command then runs. With the Bot API killed mid-wait and brought
// back, a Deny with a reason still reaches the agent. The daemon never
// listens beyond loopback.
func TestTelegramEndToEnd(t *testing.T) {
	tg := notifytest.NewTelegram(t, "123456:E2E-token")
	home := t.TempDir()
	tokFile := filepath.Join(home, "telegram.token")
	if err := os.WriteFile(tokFile, []byte("123456:E2E-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf("channels:\n  - type: telegram\n    bot_token_file: %s\n    chat_id: \"4242\"\n    api_url: %s\n    allow: [\"42\"]\n",
		tokFile, tg.URL())
	if err := os.WriteFile(filepath.Join(home, "notify.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	d := overseertest.StartDaemon(t, home)

	work := t.TempDir()
	for _, dir := range []string{"tmp_a", "tmp_b", "keep"} {
		if err := os.MkdirAll(filepath.Join(work, dir, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	call := hold(d, work, "rm -rf ./tmp_*")
	m := tg.WaitMessage("rm -rf ./tmp_*", 30*time.Second)
	t.Logf("the request reached the chat in %v", time.Since(start))
	approve, _ := buttons(t, m)

	cb := tg.Press(666, "mallory", m.ID, approve)
	if a := tg.WaitCallbackAnswer(cb, 10*time.Second); !strings.Contains(a.Text, "may not answer") {
		t.Fatalf("a stranger's press: %+v", a)
	}
	select {
	case o := <-call:
		t.Fatalf("released by a stranger: %+v", o)
	case <-time.After(300 * time.Millisecond):
	}
	tg.Press(42, "ann", m.ID, approve)
	if o := released(t, d, call); o.Decision != "allow" {
		t.Fatalf("outcome %+v", o)
	}
	tg.WaitEdit(m.ID, "approved by telegram:42 @ann via telegram", 10*time.Second)
	// The agent runs the approved command.
	if out, err := exec.Command("sh", "-c", "cd "+work+" && rm -rf ./tmp_*").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(work, "tmp_a")); !os.IsNotExist(err) {
		t.Fatal("tmp_a survived")
	}

	t.Logf("approved and ran at %v", time.Since(start))
	checkLoopbackOnly(t, d)

	// The Bot API dies while a request waits, and comes back.
	call = hold(d, t.TempDir(), "rm -rf ./tmp_*")
	m = tg.WaitMessage("rm -rf ./tmp_*", 30*time.Second)
	_, deny := buttons(t, m)
	tg.Stop()
	waitLog(t, d, "telegram: connection lost")
	tg.Restart()
	tg.Reply(42, "ann", m.ID, "deny: use git clean -fdx")
	o := released(t, d, call)
	if o.Decision != "deny" || !strings.Contains(o.Reason, "use git clean -fdx") {
		t.Fatalf("outcome %+v", o)
	}
	waitLog(t, d, "telegram: connected again")
	_ = deny
	t.Logf("denied after the outage at %v", time.Since(start))

	// The stranger's refusal is in the audit log, with channel and identity.
	res := overseertest.Run(t, home, "", "--home", home, "audit", "export")
	if !strings.Contains(res.Stdout, `"answer_refused"`) || !strings.Contains(res.Stdout, "telegram:666 @mallory") {
		t.Fatalf("no audited refusal:\n%s", res.Stdout)
	}
}

func waitLog(t *testing.T, d *overseertest.Daemon, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(d.Log(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not log %q:\n%s", s, d.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkLoopbackOnly reads the daemon's sockets from /proc and fails if it
// listens anywhere but on loopback.
func checkLoopbackOnly(t *testing.T, d *overseertest.Daemon) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Home, "daemon.json"))
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(b, &info); err != nil || info.PID == 0 {
		t.Fatalf("daemon.json: %s", b)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", info.PID))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", info.PID, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	listening := 0
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", info.PID, table))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fl := strings.Fields(sc.Text())
			if len(fl) < 10 || fl[3] != "0A" || !inodes[fl[9]] { // 0A: LISTEN
				continue
			}
			listening++
			host, _, _ := strings.Cut(fl[1], ":")
			if !loopbackHex(host) {
				t.Errorf("the daemon listens on %s (%s)", fl[1], table)
			}
		}
		f.Close()
	}
	if listening != 1 {
		t.Errorf("the daemon has %d listening sockets, want 1 (its API on loopback)", listening)
	}
}

// loopbackHex reports whether a /proc/net address (hex, host byte order
// per 32-bit word) is 127.0.0.0/8 or ::1.
func loopbackHex(h string) bool {
	switch len(h) {
	case 8:
		v, err := strconv.ParseUint(h, 16, 32)
		return err == nil && byte(v) == 127 // little-endian: the first octet is the low byte
	case 32:
		return h == "00000000000000000000000001000000"
	}
	return false
}

// TestSlackNtfyEndToEnd: one daemon with a Slack app, an ntfy topic and a
// Telegram bot. A held command is denied with a reason written in the
// Slack thread, and the reason reaches the agent (the Telegram message
// then says it was answered elsewhere); the next is approved by an ntfy
// action; a replayed Telegram press is refused; `overseer notify test`
// sends to one channel and reports the answer.
func TestSlackNtfyEndToEnd(t *testing.T) {
	sl := notifytest.NewSlack(t, "xoxb-e2e", "xapp-e2e")
	nt := notifytest.NewNtfy(t)
	tg := notifytest.NewTelegram(t, "123456:E2E-token")
	home := t.TempDir()
	yaml := "channels:\n" +
		"  - type: slack_app\n    name: slack\n    bot_token: xoxb-e2e\n    app_token: xapp-e2e\n    channel: C0OVERSEER\n    api_url: " + sl.URL() + "\n    allow: [U0ANN]\n" +
		"  - type: ntfy\n    name: phone\n    url: " + nt.URL() + "\n    topic: overseer-alerts\n    reply_topic: overseer-replies\n" +
		"  - type: telegram\n    bot_token: \"123456:E2E-token\"\n    chat_id: \"4242\"\n    api_url: " + tg.URL() + "\n    allow: [\"42\"]\n"
	if err := os.WriteFile(filepath.Join(home, "notify.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	d := overseertest.StartDaemon(t, home)
	sl.WaitConnections(1, 30*time.Second)
	nt.WaitSubscribers(1, 30*time.Second)

	// The channels' health: all three connected.
	for deadline := time.Now().Add(20 * time.Second); ; {
		code, body := d.Do(t, "GET", "/api/v1/notify/channels", nil, true)
		var health []struct{ Name, State string }
		if err := json.Unmarshal(body, &health); code != 200 || err != nil || len(health) != 3 {
			t.Fatalf("channels' health: %d %s", code, body)
		}
		up := 0
		for _, h := range health {
			if h.State == "connected" {
				up++
			}
		}
		if up == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("channels' health: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}

	work := t.TempDir()
	call := hold(d, work, "rm -rf ./tmp_*")
	sm := sl.WaitMessage("rm -rf ./tmp_*", 30*time.Second)
	tm := tg.WaitMessage("rm -rf ./tmp_*", 30*time.Second)
	nt.WaitMessage("overseer-alerts", "rm -rf ./tmp_*", 30*time.Second)
	sl.ThreadReply("U0ANN", sm, "deny: the build cache is still needed")
	o := released(t, d, call)
	if o.Decision != "deny" || !strings.Contains(o.Reason, "the build cache is still needed") {
		t.Fatalf("outcome %+v", o)
	}
	sl.WaitUpdate(sm.TS, "denied by slack:U0ANN via slack", 10*time.Second)
	tg.WaitEdit(tm.ID, "denied by slack:U0ANN via slack", 10*time.Second)

	// A press on the Telegram message of the answered request is refused.
	approve, _ := buttons(t, tm)
	cb := tg.Press(42, "ann", tm.ID, approve)
	if a := tg.WaitCallbackAnswer(cb, 10*time.Second); !strings.Contains(a.Text, "Already answered: denied by slack:U0ANN") {
		t.Fatalf("a late press: %+v", a)
	}
	cb = tg.Press(42, "ann", tm.ID, approve) // and again: the token is spent
	if a := tg.WaitCallbackAnswer(cb, 10*time.Second); !strings.Contains(a.Text, "answered already") {
		t.Fatalf("a replayed press: %+v", a)
	}

	// Approved from the phone's ntfy action.
	call = hold(d, t.TempDir(), "rm -rf ./tmp_* ./out")
	nm := nt.WaitMessage("overseer-alerts", "rm -rf ./tmp_* ./out", 30*time.Second)
	nt.Tap(nm, "Approve")
	if o := released(t, d, call); o.Decision != "allow" {
		t.Fatalf("outcome %+v", o)
	}

	// overseer notify test: the route needs the daemon's token; the test request goes to Telegram only.
	if code, body := d.Do(t, "POST", "/api/v1/notify/test?channel=telegram&wait=1s", nil, false); code != 401 {
		t.Fatalf("notify test without the token: %d %s", code, body)
	}
	if code, body := d.Do(t, "GET", "/api/v1/notify/channels", nil, false); code != 401 {
		t.Fatalf("channels' health without the token: %d %s", code, body)
	}
	res := make(chan overseertest.Result, 1)
	go func() {
		res <- overseertest.Run(t, home, "", "--home", home, "notify", "test", "telegram", "--wait", "30s")
	}()
	test := tg.WaitMessage("test of the notification channel telegram", 30*time.Second)
	ta, _ := buttons(t, test)
	tg.Press(42, "ann", test.ID, ta)
	r := <-res
	if r.Code != 0 || !strings.Contains(r.Stdout, "Answered: approved by telegram:42 @ann via telegram") {
		t.Fatalf("notify test: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, m := range sl.Messages() {
		if strings.Contains(string(m.Blocks), "test of the notification") {
			t.Fatal("the test went to Slack too")
		}
	}

	audit := overseertest.Run(t, home, "", "--home", home, "audit", "export")
	if !strings.Contains(audit.Stdout, `"answer_refused"`) || !strings.Contains(audit.Stdout, `"why":"used"`) {
		t.Fatalf("the late press is not audited:\n%s", audit.Stdout)
	}
	checkLoopbackOnly(t, d)
}

// TestEmailEndToEnd: the daemon mails a held command (SMTP) and reads the
// reply from a real Dovecot over IMAP: "approve" from the allowed address
// releases the agent; a forged-sender reply to the next one is refused.
func TestEmailEndToEnd(t *testing.T) {
	dv := notifytest.StartDovecot(t)
	smtp := notifytest.NewSMTP(t)
	home := t.TempDir()
	yaml := "channels:\n  - type: email\n    smtp: " + smtp.Addr() + "\n    tls: none\n    from: Overseer <overseer@localhost>\n" +
		"    to: [ann@example.com]\n    imap: " + dv.Addr + "\n    imap_tls: none\n    imap_username: " + dv.User +
		"\n    imap_password: " + dv.Password + "\n    allow: [ann@example.com]\n"
	if err := os.WriteFile(filepath.Join(home, "notify.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	d := overseertest.StartDaemon(t, home)
	reply := func(m *mail.Message, from, body string) []byte {
		return []byte(strings.ReplaceAll("From: "+from+"\nTo: overseer@localhost\nSubject: Re: "+m.Header.Get("Subject")+
			"\nIn-Reply-To: "+m.Header.Get("Message-ID")+"\nMessage-ID: <"+fmt.Sprint(time.Now().UnixNano())+"@example.com>\n\n"+body,
			"\n", "\r\n"))
	}

	call := hold(d, t.TempDir(), "rm -rf ./tmp_*")
	m := smtp.WaitMessage("rm -rf ./tmp_*", 30*time.Second)
	dv.Deliver(reply(m, "Ann <ann@example.com>", "approve\n\nSent from my phone\n"))
	if o := released(t, d, call); o.Decision != "allow" {
		t.Fatalf("outcome %+v", o)
	}

	call = hold(d, t.TempDir(), "rm -rf ./tmp_* ./dist")
	m = smtp.WaitMessage("rm -rf ./tmp_* ./dist", 30*time.Second)
	dv.Deliver(reply(m, "Mallory <mallory@example.com>", "approve"))
	waitLog(t, d, "refused an answer from email:mallory@example.com")
	dv.Deliver(reply(m, "ann@example.com", "deny: keep dist for the release"))
	if o := released(t, d, call); o.Decision != "deny" || !strings.Contains(o.Reason, "keep dist for the release") {
		t.Fatalf("outcome %+v", o)
	}
	checkLoopbackOnly(t, d)
}
