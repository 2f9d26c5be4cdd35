package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// trustPolicy puts package installs to a person; the built-in policy lets
// them run with a notification.
const trustPolicy = `
guards:
  shell:
    patterns:
      - {command: "npm install", level: confirm, check: npm-install, message: "installs packages; their install scripts run"}
`

type proposalJSON struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Version   string `json:"version"`
	Approvals int    `json:"approvals"`
	Refusals  int    `json:"refusals"`
	Rule      struct {
		Name     string            `json:"name"`
		Level    string            `json:"level"`
		When     string            `json:"when"`
		Match    []json.RawMessage `json:"match"`
		NotMatch []json.RawMessage `json:"not_match"`
	} `json:"rule"`
	DryRun struct {
		Examined     int               `json:"examined"`
		Matched      int               `json:"matched"`
		PromptsSaved int               `json:"prompts_saved"`
		LetThrough   []json.RawMessage `json:"let_through"`
	} `json:"dry_run"`
}

// submitNpm submits `command` as Claude Code's Bash in /tmp/trust-app.
func submitNpm(t *testing.T, d *overseertest.Daemon, command string) outcome {
	t.Helper()
	act := map[string]any{"tool": "Bash", "agent": "claude-code", "session": "s1", "cwd": "/tmp/trust-app",
		"args": map[string]any{"command": command}}
	code, body := d.Do(t, "POST", "/api/v1/actions", act, false)
	if code != 200 {
		t.Fatalf("submit %q: %d %s", command, code, body)
	}
	return decode[outcome](t, body)
}

// answerAsPerson submits a call, checks that a person is asked, and answers
// it from the CLI as a person would.
func answerAsPerson(t *testing.T, d *overseertest.Daemon, command, decision string) {
	t.Helper()
	o := submitNpm(t, d, command)
	if o.Decision != "pending" || o.Approval == nil {
		t.Fatalf("%q: %+v, want it put to a person", command, o)
	}
	r := overseertest.Run(t, d.Home, "", decision, o.Approval.ID, "--who", "ann")
	if r.Code != 0 {
		t.Fatalf("%s %q: %d %s %s", decision, command, r.Code, r.Stdout, r.Stderr)
	}
}

func listProposals(t *testing.T, home string) []proposalJSON {
	t.Helper()
	r := overseertest.Run(t, home, "", "rules", "proposals", "--json")
	if r.Code != 0 {
		t.Fatalf("rules proposals: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	var list []proposalJSON
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("rules proposals --json: %v\n%s", err, r.Stdout)
	}
	return list
}

// The learned-trust loop, end to end with the real binary: a person
// approves `npm install <pkg>` three times, a rule is proposed with its dry
// run, the person accepts it, and the fourth install runs at once; an
// install from a git URL is still put to a person, and so is everything
// the person refused.
func TestLearnedTrustEndToEnd(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "policy.yaml"), []byte(trustPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	d := overseertest.StartDaemon(t, home)

	answerAsPerson(t, d, "npm install lodash", "approve")
	answerAsPerson(t, d, "npm install git+https://github.com/someone/thing.git", "deny")
	answerAsPerson(t, d, "npm install express", "approve")
	if ps := listProposals(t, home); len(ps) != 0 {
		t.Fatalf("after two approvals: %+v", ps)
	}
	answerAsPerson(t, d, "npm install left-pad", "approve")

	ps := listProposals(t, home)
	if len(ps) != 1 {
		t.Fatalf("after three approvals: want one proposal, got %+v", ps)
	}
	p := ps[0]
	if p.Rule.Level != "auto" || p.Approvals != 3 || len(p.Rule.Match) != 3 || len(p.Rule.NotMatch) != 1 ||
		p.DryRun.PromptsSaved != 3 || len(p.DryRun.LetThrough) != 0 || p.DryRun.Examined != 4 {
		t.Fatalf("proposal: %+v", p)
	}
	// The human form names the proposal and its dry run.
	r := overseertest.Run(t, home, "", "rules", "proposals")
	if r.Code != 0 || !strings.Contains(r.Stdout, p.ID) || !strings.Contains(r.Stdout, "would have saved 3 prompt(s)") {
		t.Fatalf("rules proposals: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	r = overseertest.Run(t, home, "", "rules", "show", p.ID)
	if r.Code != 0 || !strings.Contains(r.Stdout, "npm install lodash") {
		t.Fatalf("rules show: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}

	// Before the person's yes nothing is loosened.
	if o := submitNpm(t, d, "npm install chalk"); o.Decision != "pending" {
		t.Fatalf("before accepting: %+v", o)
	}
	r = overseertest.Run(t, home, "", "rules", "accept", p.ID, "--version", p.Version, "--who", "ann")
	if r.Code != 0 || !strings.Contains(r.Stdout, "Accepted "+p.ID) {
		t.Fatalf("rules accept: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	if o := submitNpm(t, d, "npm install react"); o.Decision != "allow" || o.Level != "auto" {
		t.Fatalf("the fourth install: %+v, want auto", o)
	}
	for _, cmd := range []string{
		"npm install git+https://github.com/other/pkg.git",
		"npm install github:someone/thing",
		"sudo npm install react",
		"npm install -g react",
	} {
		if o := submitNpm(t, d, cmd); o.Decision != "pending" {
			t.Errorf("%q: %+v, want it put to a person", cmd, o)
		}
	}
	// Audited and revertible.
	r = overseertest.Run(t, home, "", "policy", "history", "--json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"origin": "learned"`) || !strings.Contains(r.Stdout, p.Rule.Name) {
		t.Fatalf("policy history: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	r = overseertest.Run(t, home, "", "audit", "export")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"type":"proposal"`) {
		t.Fatalf("audit export has no proposal record: %d %s", r.Code, r.Stderr)
	}
	r = overseertest.Run(t, home, "", "rules", "remove", p.Rule.Name)
	if r.Code != 0 {
		t.Fatalf("rules remove: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	if o := submitNpm(t, d, "npm install vue"); o.Decision != "pending" {
		t.Fatalf("after removing the rule: %+v", o)
	}
	if ps := listProposals(t, home); len(ps) != 0 {
		t.Fatalf("an accepted, then removed proposal comes back: %+v", ps)
	}
	r = overseertest.Run(t, home, "", "audit", "verify")
	if r.Code != 0 {
		t.Fatalf("audit verify: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
}

// Refusing two calls of a kind never produces a proposal that would allow
// them, however many calls of that kind are approved.
func TestRefusalsNeverLearned(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "policy.yaml"), []byte(trustPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	d := overseertest.StartDaemon(t, home)
	answerAsPerson(t, d, "npm install evil-thing", "deny")
	answerAsPerson(t, d, "npm install typo-squat", "deny")
	for _, pkg := range []string{"lodash", "express", "left-pad", "react"} {
		answerAsPerson(t, d, "npm install "+pkg, "approve")
	}
	for _, p := range listProposals(t, home) {
		rule, _ := json.Marshal(map[string]any{"name": "x", "level": "auto", "kind": []string{"shell"}, "when": p.Rule.When})
		r := overseertest.Run(t, home, "", "rules", "test", "--rule", string(rule), "--json")
		t.Fatalf("a proposal despite the refusals: %+v\n%s", p, r.Stdout)
	}
	// Put to a person again, or refused at once with the person's words
	// (the same call in the same session): never let through.
	if o := submitNpm(t, d, "npm install evil-thing"); o.Decision != "pending" && o.Decision != "deny" {
		t.Fatalf("a refused call: %+v", o)
	}
}
