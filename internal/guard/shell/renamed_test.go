package shell

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRenamedOverseerBinary: the guard knew Overseer's CLI and hook by
// their names; a copy of either under another name (./ov, made by an
// earlier action) ran as a program of the working tree — a forged hook
// event, a gateway with the agent's policy. The guard now reads the build
// information of the file a command runs by its path. The twins: the
// copy's read-only commands are not refused as Overseer's, and another
// program's copy is not Overseer.
func TestRenamedOverseerBinary(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, overseertest.Binary(t), filepath.Join(dir, "ov"))
	copyFile(t, overseertest.HookBinary(t), filepath.Join(dir, "h"))
	if ls, err := os.Executable(); err == nil {
		copyFile(t, ls, filepath.Join(dir, "tool")) // a Go binary of the same module, not a command of Overseer's
	}
	env := Env{Cwd: dir, Home: t.TempDir()}
	selfApproved := func(cmd string) bool {
		for _, f := range Analyze(cmd, env).Findings {
			if f.Check == "shell.self-approve" {
				return true
			}
		}
		return false
	}
	for _, c := range []string{
		"./ov hook claude-code < e.json",
		"./ov --policy mine.yaml mcp",
		"./ov serve --policy mine.yaml",
		"env OVERSEER_HOME=/tmp/h " + filepath.Join(dir, "ov") + " agent promote claude-code --to supervised",
		`sh -c "./ov approve apr_1"`,
		"./h hook codex",
	} {
		if !selfApproved(c) {
			t.Errorf("%s: not refused as Overseer's command", c)
		}
	}
	// A copy made earlier in the same command, from a path the guard reads.
	for _, c := range []string{
		"cp " + overseertest.Binary(t) + " ./x && ./x hook claude-code",
		"cp " + overseertest.HookBinary(t) + " ./y; cp ./y ./z && ./z hook gemini",
	} {
		if !selfApproved(c) {
			t.Errorf("%s: not refused as Overseer's command", c)
		}
	}
	for _, c := range []string{"./ov version", "cp " + overseertest.Binary(t) + " ./x && ./x version", "cp ./tool ./t2 && ./t2", "./ov approvals", "./ov policy test", "./tool -test.v", "./missing hook claude-code"} {
		if selfApproved(c) {
			t.Errorf("twin %s: refused as Overseer's command", c)
		}
	}
}
