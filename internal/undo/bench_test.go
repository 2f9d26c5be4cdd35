package undo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

// BenchmarkKeep measures keeping a 4 KiB file before a write: the cost the
// kernel adds to every undoable action.
func BenchmarkKeep(b *testing.B) {
	base := b.TempDir()
	db, err := sqlite.Open(filepath.Join(base, "overseer.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := New(filepath.Join(base, "undo"), db, Options{})
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(base, "f.txt")
	if err := os.WriteFile(p, []byte(strings.Repeat("line of text\n", 315)), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Keep(ctx, fmt.Sprintf("act_%d", i), "s", p); err != nil {
			b.Fatal(err)
		}
	}
}
