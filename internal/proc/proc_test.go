package proc

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, line   string
		state, start string
		bad          bool
	}{
		{"plain", "4242 (overseer) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 0 0", "S", "987654", false},
		{"name with spaces and parens", "77 (a) b (c)) Z 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5555 0 0", "Z", "5555", false},
		{"short", "77 (x) S 1 2 3", "", "", true},
		{"no name", "77 x S 1", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := parseStat(tc.line)
			if (err != nil) != tc.bad {
				t.Fatalf("err %v", err)
			}
			if !tc.bad && (st.state != tc.state || st.start != tc.start) {
				t.Fatalf("got %+v", st)
			}
		})
	}
}

// TestCheck runs a real child: it is Running while it runs and Gone once
// it exited — as a zombie before it is reaped, and after.
func TestCheck(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED (not a pass): /proc is Linux's")
	}
	self, ok := Self()
	if !ok || Check(self) != Running {
		t.Fatalf("self %+v %v", self, ok)
	}
	if p, ok := Parent(); !ok || p.PID != os.Getppid() {
		t.Fatalf("parent %+v", p)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, ok := Of(cmd.Process.Pid)
	if !ok || Check(id) != Running {
		t.Fatalf("child %+v %v", id, ok)
	}
	if got := Check(Identity{PID: id.PID, Start: id.Start + "1", Host: id.Host}); got != Gone {
		t.Fatalf("another start time: %v", got)
	}
	if got := Check(Identity{PID: id.PID, Start: id.Start, Host: "elsewhere"}); got != Unknown {
		t.Fatalf("another host: %v", got)
	}
	_ = cmd.Process.Kill()
	// Not reaped yet: a zombie counts as gone.
	for i := 0; i < 200 && Check(id) != Gone; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if got := Check(id); got != Gone {
		t.Fatalf("killed child: %v", got)
	}
	_ = cmd.Wait()
	if got := Check(id); got != Gone {
		t.Fatalf("reaped child: %v", got)
	}
}
