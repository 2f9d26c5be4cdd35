package kernel_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/overseer-dev/overseer/internal/kernel"
)

// Every kernel signs with the console's key, so hooks and the CLI may
// create it at once: each gets the one key, none reads it half written,
// and no temporary file is left.
func TestLoadConsoleKeyConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, kernel.ConsoleKeyName)
	const n = 32
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = kernel.LoadConsoleKey(path)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("two keys: %x and %x", keys[0], keys[i])
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("the directory holds %v (%v), want the key alone", ents, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key's mode: %v %v", fi, err)
	}
}
