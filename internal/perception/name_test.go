package perception_test

import (
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/perception"
)

func TestBoundName(t *testing.T) {
	short := strings.Repeat("s", perception.MaxName)
	if got := perception.BoundName(short); got != short {
		t.Fatalf("a name of MaxName bytes was changed: %q", got)
	}
	a, b := short+"a", short+"b"
	ba, bb := perception.BoundName(a), perception.BoundName(b)
	if len(ba) > perception.MaxName || len(bb) > perception.MaxName {
		t.Fatalf("bounded names of %d and %d bytes", len(ba), len(bb))
	}
	if ba == bb || ba == short || perception.BoundName(a) != ba {
		t.Fatalf("bounded names are not distinct and stable: %q %q", ba, bb)
	}
}
