package kernel_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// An MCP call whose name reads, with its paths under a name of its own or
// in a list, reaches the paths guard: the filesystem server's
// read_multiple_files of Overseer's token (which lets an agent answer its
// own approvals) was notify, judged by the name alone, as were filePath,
// a nested object, and a name that hides its write (getFileDELETEAll).
// The twins, reads of project files, keep their level.
func TestMCPReadNamedPathsJudged(t *testing.T) {
	home, ovh, proj := egressWorld(t)
	ctx := context.Background()
	k, err := kernel.Open(ctx, kernel.Config{Home: ovh})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	token := filepath.Join(ovh, "token")
	key := filepath.Join(home, ".ssh", "id_ed25519")
	level := func(session, tool string, args map[string]any) action.Level {
		t.Helper()
		sub, err := k.Submit(ctx, &action.Action{Tool: tool, Kind: action.KindMCP, Agent: "claude-code", Session: session, Cwd: proj, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return sub.Verdict.Level
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want action.Level
	}{
		{"mcp__fs__read_multiple_files", map[string]any{"paths": []any{filepath.Join(proj, "README.md"), token}}, action.Block},
		{"mcp__fs__read_text_file", map[string]any{"filePath": token}, action.Block},
		{"mcp__fs__read_file", map[string]any{"args": map[string]any{"source": token}}, action.Block},
		{"mcp__fs__read_multiple_files", map[string]any{"paths": []any{key}}, action.Approve},
		{"mcp__fs__getFileDELETEAll", map[string]any{"id": "x"}, action.Confirm},
	} {
		if got := level("s-attack", c.tool, c.args); got < c.want {
			t.Errorf("%s %v: %s, want at least %s", c.tool, c.args, got, c.want)
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"mcp__fs__read_multiple_files", map[string]any{"paths": []any{filepath.Join(proj, "README.md"), "report.json"}}},
		{"mcp__fs__read_text_file", map[string]any{"filePath": "README.md"}},
		{"mcp__x__get_items", map[string]any{"route": "/api/v1/users"}},
	} {
		// Another session: after the attacks' secret reads, every send of
		// theirs (MCP arguments are sends) goes to a person.
		if got := level("s-twin", c.tool, c.args); !got.RunsWithoutPerson() {
			t.Errorf("%s %v: %s, want it to run as before", c.tool, c.args, got)
		}
	}
	// The agent's own tools, whose text may start with a slash, and an
	// MCP call whose kind the kernel derives from its name as a hook's is.
	for _, c := range []struct {
		tool string
		args map[string]any
		runs bool
	}{
		{"SlashCommand", map[string]any{"command": "/review"}, true},
		{"Skill", map[string]any{"command": "/pdf"}, true},
		{"WebSearch", map[string]any{"query": "/etc/passwd format"}, true},
		{"mcp__fs__read_multiple_files", map[string]any{"paths": []any{token}}, false},
	} {
		sub, err := k.Submit(ctx, &action.Action{Tool: c.tool, Agent: "claude-code", Session: "s-own", Cwd: proj, Args: c.args})
		if err != nil {
			t.Fatal(err)
		}
		if got := sub.Verdict.Level.RunsWithoutPerson(); got != c.runs {
			t.Errorf("%s %v: %s, want runs=%v", c.tool, c.args, sub.Verdict.Level, c.runs)
		}
	}
}
