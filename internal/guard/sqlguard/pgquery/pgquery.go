// Package pgquery runs PostgreSQL's own parser (libpg_query), compiled to
// WebAssembly, on wazero: the SQL guard's parser, without cgo.
//
// It is the part of github.com/wasilibs/go-pgquery's parser package that
// Overseer uses (ParseToJSON, ScanToProtobuf), with the same WebAssembly
// module (see gen.sh for the version) stored gzip-compressed: 0.4 MB in the
// binary instead of 2.3 MB, decompressed once, on first use. The code is
// under go-pgquery's MIT licence (LICENSE); the module holds pg_query's and
// PostgreSQL's code (NOTICE.txt, COPYRIGHT).
//
// Functions panic when the module cannot be loaded or traps, as go-pgquery's
// do; callers recover (the SQL guard turns a panic into ErrParser, which
// never allows). An instance that panicked is closed, never reused; the next
// call instantiates the compiled module again (cheap: it is compiled once).
package pgquery

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed" // the compressed module
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/wasilibs/wazero-helpers/allocator"
)

//go:embed libpg_query.wasm.gz
var wasmGz []byte

var (
	errFailedWrite = errors.New("pgquery: failed to write to wasm memory")
	errFailedRead  = errors.New("pgquery: failed to read from wasm memory")
)

// Error is an error the parser reports about the text (a syntax error).
type Error struct {
	Message   string // exception message
	Funcname  string // source function of exception (e.g. SearchSysCache)
	Filename  string // source of exception (e.g. parse.l)
	Lineno    int    // source of exception (e.g. 104)
	Cursorpos int    // char in query at which exception occurred
	Context   string // additional context (optional, can be NULL)
}

func (e *Error) Error() string { return e.Message }

// wasmModule decompresses the module.
func wasmModule() ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(wasmGz))
	if err != nil {
		return nil, err
	}
	// The gzip trailer ends with the size (mod 2^32): one allocation.
	var out bytes.Buffer
	if n := len(wasmGz); n >= 4 {
		out.Grow(min(int(binary.LittleEndian.Uint32(wasmGz[n-4:])), 64<<20) + bytes.MinRead)
	}
	if _, err := out.ReadFrom(zr); err != nil {
		return nil, err
	}
	return out.Bytes(), zr.Close()
}

// ParseToJSON parses sql into its parse tree, as JSON.
func ParseToJSON(sql string) (string, error) {
	a := get()
	defer put(a)
	in := a.newCString(sql)
	defer in.free()
	return a.parse(in)
}

// ScanToProtobuf scans sql into a ScanResult (pg_query's protobuf).
func ScanToProtobuf(sql string) ([]byte, error) {
	a := get()
	defer put(a)
	in := a.newCString(sql)
	defer in.free()
	return a.scan(in)
}

var (
	mu   sync.Mutex
	idle *abi // the instance not in use, if any

	loadMu   sync.Mutex
	rt       wazero.Runtime        // shared by the instances; nil until loaded
	compiled wazero.CompiledModule // compiled once: most of the first call's cost

	instances, compiles atomic.Int64 // for tests
)

// get takes the idle instance or makes one. put gives it back unless the
// call panicked: that instance is closed (its memory may be inconsistent
// after a trap) and the next call makes a new one from the compiled module.
func get() *abi {
	mu.Lock()
	a := idle
	idle = nil
	mu.Unlock()
	if a == nil {
		a = newABI()
	}
	return a
}

func put(a *abi) {
	if r := recover(); r != nil {
		_ = a.mod.Close(context.Background())
		panic(r)
	}
	mu.Lock()
	if idle == nil {
		idle, a = a, nil
	}
	mu.Unlock()
	if a != nil {
		_ = a.mod.Close(context.Background())
	}
}

type abi struct {
	init, parseF, freeParse, scanF, freeScan, malloc, freeF lazyFunction

	mem api.Memory
	mod api.Module
}

// load makes the runtime and compiles the module, once; a failure is
// retried by the next call.
func load() (wazero.Runtime, wazero.CompiledModule) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if rt != nil {
		return rt, compiled
	}
	ctx := context.Background()
	code, err := wasmModule()
	if err != nil {
		panic(err)
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCoreFeatures(api.CoreFeaturesV2|experimental.CoreFeaturesThreads))
	ok := false
	defer func() {
		if !ok {
			_ = r.Close(ctx)
		}
	}()
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	if err := instantiateWasix(ctx, r); err != nil {
		panic(err)
	}
	c, err := r.CompileModule(ctx, code)
	if err != nil {
		panic(err)
	}
	compiles.Add(1)
	ok = true
	rt, compiled = r, c
	return rt, compiled
}

func newABI() *abi {
	r, c := load()
	ctx := experimental.WithMemoryAllocator(context.Background(), allocator.NewNonMoving())
	// Anonymous, so that instances may coexist; no stdout or stderr: the
	// parser's output is its return values.
	cfg := wazero.NewModuleConfig().WithName("").WithSysNanotime().WithStartFunctions("_initialize")
	mod, err := r.InstantiateModule(ctx, c, cfg)
	if err != nil {
		panic(err)
	}
	a := &abi{
		init:      lazyFunction{mod: mod, name: "pg_query_init"},
		parseF:    lazyFunction{mod: mod, name: "pg_query_parse"},
		freeParse: lazyFunction{mod: mod, name: "pg_query_free_parse_result"},
		scanF:     lazyFunction{mod: mod, name: "pg_query_scan"},
		freeScan:  lazyFunction{mod: mod, name: "pg_query_free_scan_result"},
		malloc:    lazyFunction{mod: mod, name: "malloc"},
		freeF:     lazyFunction{mod: mod, name: "free"},
		mem:       mod.Memory(),
		mod:       mod,
	}
	defer func() {
		if r := recover(); r != nil {
			_ = mod.Close(context.Background())
			panic(r)
		}
	}()
	a.init.call(context.Background())
	instances.Add(1)
	return a
}

func (a *abi) parse(in cString) (string, error) {
	ctx := backgroundContext()
	res := a.malloc.call(ctx, 12)
	defer a.freeF.call(ctx, res)
	a.parseF.call(ctx, res, uint64(in.ptr))
	defer a.freeParse.call(ctx, res)
	buf, ok := a.mem.Read(uint32(res), 12)
	if !ok {
		panic(errFailedRead)
	}
	if errPtr := binary.LittleEndian.Uint32(buf[8:]); errPtr != 0 {
		return "", a.pgError(errPtr)
	}
	return a.cStringAt(uint32(res)), nil
}

func (a *abi) scan(in cString) ([]byte, error) {
	ctx := backgroundContext()
	res := a.malloc.call(ctx, 16)
	defer a.freeF.call(ctx, res)
	a.scanF.call(ctx, res, uint64(in.ptr))
	defer a.freeScan.call(ctx, res)
	buf, ok := a.mem.Read(uint32(res), 16)
	if !ok {
		panic(errFailedRead)
	}
	if errPtr := binary.LittleEndian.Uint32(buf[12:]); errPtr != 0 {
		return nil, a.pgError(errPtr)
	}
	n := binary.LittleEndian.Uint32(buf)
	data := binary.LittleEndian.Uint32(buf[4:])
	out, ok := a.mem.Read(data, n)
	if !ok {
		panic(errFailedRead)
	}
	return bytes.Clone(out), nil
}

func (a *abi) pgError(p uint32) error {
	lineno, ok := a.mem.ReadUint32Le(p + 12)
	if !ok {
		panic(errFailedRead)
	}
	cursor, ok := a.mem.ReadUint32Le(p + 16)
	if !ok {
		panic(errFailedRead)
	}
	return &Error{
		Message:   a.cStringAt(p),
		Funcname:  a.cStringAt(p + 4),
		Filename:  a.cStringAt(p + 8),
		Lineno:    int(lineno),
		Cursorpos: int(cursor),
		Context:   a.cStringAt(p + 20),
	}
}

// cStringAt reads the NUL-terminated string whose address is at pp.
func (a *abi) cStringAt(pp uint32) string {
	p, ok := a.mem.ReadUint32Le(pp)
	if !ok {
		panic(errFailedRead)
	}
	if p == 0 {
		return ""
	}
	end := p
	for {
		b, ok := a.mem.ReadByte(end)
		if !ok {
			panic(errFailedRead)
		}
		if b == 0 {
			break
		}
		end++
	}
	buf, ok := a.mem.Read(p, end-p)
	if !ok {
		panic(errFailedRead)
	}
	return string(buf)
}

type lazyFunction struct {
	f    api.Function
	mod  api.Module
	name string
}

func (f *lazyFunction) call(ctx context.Context, args ...uint64) uint64 {
	if f.f == nil {
		f.f = f.mod.ExportedFunction(f.name)
		if f.f == nil {
			panic("pgquery: the module lacks " + f.name)
		}
	}
	var stack [3]uint64
	copy(stack[:], args)
	if err := f.f.CallWithStack(ctx, stack[:max(len(args), 1)]); err != nil {
		panic(err)
	}
	return stack[0]
}

type cString struct {
	ptr uint32
	a   *abi
}

func (a *abi) newCString(s string) cString {
	ptr := uint32(a.malloc.call(context.Background(), uint64(len(s)+1)))
	if ptr == 0 || !a.mem.WriteString(ptr, s) || !a.mem.WriteByte(ptr+uint32(len(s)), 0) {
		panic(errFailedWrite)
	}
	return cString{ptr: ptr, a: a}
}

func (s cString) free() { s.a.freeF.call(context.Background(), uint64(s.ptr)) }
