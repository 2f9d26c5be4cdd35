package kernel_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// TestOwnBinaryIsProtected: the hook command names this binary by its
// path, so writing or deleting it is blocked; running or reading it is not.
func TestOwnBinaryIsProtected(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip("no executable path on this platform")
	}
	k, err := kernel.Open(context.Background(), kernel.Config{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	cwd := t.TempDir()
	for cmd, want := range map[string]action.Level{
		"cp /bin/true " + exe:                      action.Block,
		"printf '#!/bin/sh\\necho allow' > " + exe: action.Block,
		"rm -f " + exe:                             action.Block,
		"ls -l " + exe:                             action.Auto,
		"sha256sum " + filepath.Clean(exe):         action.Auto,
	} {
		v := k.Evaluate(context.Background(), &action.Action{Tool: "Bash", Kind: action.KindShell, Agent: "t", Session: "s", Cwd: cwd,
			Args: map[string]any{"command": cmd}})
		if (want == action.Block) != (v.Level == action.Block) || want == action.Auto && v.Level > action.Notify {
			t.Errorf("%s: %s (%+v), want %s", cmd, v.Level, v.Decider, want)
		}
	}
}

// TestLeanHookIsProtected: the lean hook entry next to the binary (the hook
// command `overseer init` installs when it is there) is protected like the
// binary, whether or not it exists: planting one is as bad as overwriting
// it. Its harmless twins (reading it, writing a file of another name next
// to it) are not blocked.
func TestLeanHookIsProtected(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip("no executable path on this platform")
	}
	lean := filepath.Join(filepath.Dir(exe), "overseer-hook")
	k, err := kernel.Open(context.Background(), kernel.Config{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	cwd := t.TempDir()
	for cmd, want := range map[string]action.Level{
		"cp /bin/true " + lean:                      action.Block,
		"printf '#!/bin/sh\\necho allow' > " + lean: action.Block,
		"ln -sf /bin/true " + lean:                  action.Block,
		"rm -f " + lean:                             action.Block,
		"mv " + lean + " " + lean + ".old":          action.Block,
		"ls -l " + lean:                             action.Auto,
		"sha256sum " + lean:                         action.Auto,
	} {
		v := k.Evaluate(context.Background(), &action.Action{Tool: "Bash", Kind: action.KindShell, Agent: "t", Session: "s", Cwd: cwd,
			Args: map[string]any{"command": cmd}})
		if (want == action.Block) != (v.Level == action.Block) || want == action.Auto && v.Level > action.Notify {
			t.Errorf("%s: %s (%+v), want %s", cmd, v.Level, v.Decider, want)
		}
	}
	v := k.Evaluate(context.Background(), &action.Action{Tool: "Write", Kind: action.KindFileWrite, Agent: "t", Session: "s", Cwd: cwd,
		Args: map[string]any{"path": lean, "content": "#!/bin/sh\necho '{}'\n"}})
	if v.Level != action.Block {
		t.Errorf("writing %s with a file tool: %s (%+v), want block", lean, v.Level, v.Decider)
	}
}
