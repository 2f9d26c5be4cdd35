package kernel

import (
	"fmt"
	"testing"
)

// TestCallIndexForgetsTheOldest: past maxCalls the oldest call is
// forgotten, one at a time, and a call put again keeps its place.
func TestCallIndexForgetsTheOldest(t *testing.T) {
	var c callIndex
	for i := range maxCalls + 2 {
		c.put(fmt.Sprint("act_", i), "s", fmt.Sprint("h", i))
		if i == 5 {
			c.put("act_1", "s", "again") // not a new call
		}
	}
	for _, id := range []string{"act_0", "act_1"} {
		if _, _, ok := c.get(id); ok {
			t.Errorf("%s kept past the bound", id)
		}
	}
	if _, h, ok := c.get("act_2"); !ok || h != "h2" {
		t.Errorf("act_2: %q %v", h, ok)
	}
	if _, h, ok := c.get(fmt.Sprint("act_", maxCalls+1)); !ok || h != fmt.Sprint("h", maxCalls+1) {
		t.Errorf("the newest: %q %v", h, ok)
	}
	if len(c.by) != maxCalls {
		t.Errorf("%d calls kept, want %d", len(c.by), maxCalls)
	}
}

func BenchmarkCallIndexPut(b *testing.B) {
	var c callIndex
	for i := range b.N {
		c.put(fmt.Sprint("act_", i), "s", "h")
	}
}
