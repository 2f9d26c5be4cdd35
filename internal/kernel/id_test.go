package kernel_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/kernel"
)

// Action ids minted later sort after earlier ones (the audit index on
// them takes its inserts at one end), and stay unguessable and distinct.
func TestNewActionIDOrderedAndRandom(t *testing.T) {
	form := regexp.MustCompile(`^act_[0-9a-v]{26}$`)
	seen := map[string]bool{}
	prev := ""
	for i := 0; i < 2000; i++ {
		if i%500 == 0 {
			time.Sleep(2 * time.Millisecond) // a later millisecond
		}
		id := kernel.NewActionID()
		if !form.MatchString(id) {
			t.Fatalf("id %q has the wrong form", id)
		}
		if seen[id] {
			t.Fatalf("id %q minted twice", id)
		}
		seen[id] = true
		// Within one millisecond the order is random; across them it is
		// the time's: compare the characters that hold time bits only
		// (9 of them: 45 of the 48).
		if prev != "" && id[:4+9] < prev[:4+9] {
			t.Fatalf("id %q sorts before the earlier %q", id, prev)
		}
		prev = id
	}
	// The random part differs in many positions: ids in one millisecond
	// share only the time's characters.
	a, b := kernel.NewActionID(), kernel.NewActionID()
	same := 0
	for i := 14; i < len(a); i++ {
		if a[i] == b[i] {
			same++
		}
	}
	if same > 8 {
		t.Fatalf("ids %q and %q share %d of their random characters", a, b, same)
	}
}
