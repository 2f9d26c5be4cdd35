package pgquery

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// wasmSHA256 is the digest of go-pgquery's libpg_query.so at the version in
// gen.sh: the compressed copy must decompress to exactly that module.
const wasmSHA256 = "3fc045654ea91269c1487220a10f8b612e96eae9b96558ee8cbb004bc4befe77"

func TestModuleIsGoPgquerys(t *testing.T) {
	code, err := wasmModule()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(code)
	if got := hex.EncodeToString(sum[:]); got != wasmSHA256 {
		t.Fatalf("the embedded module decompresses to %s (%d bytes), want %s: run gen.sh", got, len(code), wasmSHA256)
	}
	if len(wasmGz)*3 > len(code) {
		t.Errorf("the module is stored in %d bytes for %d: it should be compressed", len(wasmGz), len(code))
	}
}

func TestParseAndScan(t *testing.T) {
	js, err := ParseToJSON("SELECT a FROM t WHERE b = 1; DELETE FROM u")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"SelectStmt"`, `"DeleteStmt"`, `"relname":"t"`, `"relname":"u"`} {
		if !strings.Contains(js, want) {
			t.Errorf("the parse tree lacks %s: %s", want, js)
		}
	}
	pb, err := ScanToProtobuf("SELECT 1")
	if err != nil || len(pb) == 0 {
		t.Fatalf("ScanToProtobuf = %d bytes, %v", len(pb), err)
	}
	// A syntax error is an *Error with the position, and the instance
	// stays usable (the parser's error path restores its stack).
	_, err = ParseToJSON("SELECT FROM WHERE ((")
	var pe *Error
	if !errors.As(err, &pe) || pe.Message == "" || pe.Cursorpos == 0 {
		t.Fatalf("ParseToJSON of bad SQL = %v, want an *Error with a position", err)
	}
	again, err := ParseToJSON("SELECT a FROM t WHERE b = 1; DELETE FROM u")
	if err != nil || again != js {
		t.Fatalf("after an error, the same text parses to %q, %v; want %q", again, err, js)
	}
}

// TestPanicDropsTheInstance: a call that panics (a trap in the parser)
// never leaves its instance for the next call; the next one gets a fresh
// instance of the module, which is not compiled again.
func TestPanicDropsTheInstance(t *testing.T) {
	want, err := ParseToJSON("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	n, c := instances.Load(), compiles.Load()
	func() {
		defer func() {
			if r := recover(); r != "trap" {
				t.Errorf("the panic was %v, want it passed on", r)
			}
		}()
		a := get()
		defer put(a)
		panic("trap")
	}()
	if got, err := ParseToJSON("SELECT 1"); err != nil || got != want {
		t.Fatalf("after a panic: %q, %v; want %q", got, err, want)
	}
	if got := instances.Load(); got != n+1 {
		t.Errorf("%d instances made after the panic, want 1", got-n)
	}
	if got := compiles.Load(); got != c {
		t.Errorf("the module was compiled %d more times, want 0", got-c)
	}
	// Without a panic, the instance is reused.
	if _, err := ScanToProtobuf("SELECT 2"); err != nil {
		t.Fatal(err)
	}
	if got := instances.Load(); got != n+1 {
		t.Errorf("an instance was made for a call after a clean one")
	}
}

// BenchmarkWasmModule is what storing the module compressed adds to the
// parser's first use (its compilation, which follows, takes far longer).
func BenchmarkWasmModule(b *testing.B) {
	for b.Loop() {
		if _, err := wasmModule(); err != nil {
			b.Fatal(err)
		}
	}
}
