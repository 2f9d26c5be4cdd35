package pgquery

// The host functions of the wasix_32v1 module that the parser imports, from
// go-pgquery's internal/wasix32v1 (MIT, see LICENSE): stack checkpoints
// (the parser's setjmp and longjmp, used for its error reports) and stubs
// for threads and signals, which it never uses here.

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

const wasixModule = "wasix_32v1"

const i32, i64 = api.ValueTypeI32, api.ValueTypeI64

// instantiateWasix adds the wasix_32v1 host module to rt.
func instantiateWasix(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(wasixModule)
	exportFunctions(b)
	_, err := b.Instantiate(ctx)
	return err
}

func exportFunctions(builder wazero.HostModuleBuilder) {
	builder.NewFunctionBuilder().
		WithGoModuleFunction(callbackSignalFn, []api.ValueType{i32, i32}, []api.ValueType{}).
		Export("callback_signal")

	builder.NewFunctionBuilder().
		WithGoModuleFunction(futexWaitFn, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		Export("futex_wait")

	builder.NewFunctionBuilder().
		WithGoModuleFunction(futexWakeFn, []api.ValueType{i32, i32}, []api.ValueType{i32}).
		Export("futex_wake")

	builder.NewFunctionBuilder().
		WithGoModuleFunction(futexWakeAllFn, []api.ValueType{i32, i32}, []api.ValueType{i32}).
		Export("futex_wake_all")

	builder.NewFunctionBuilder().
		WithGoModuleFunction(stackCheckpointFn, []api.ValueType{i32, i32}, []api.ValueType{i32}).
		Export("stack_checkpoint")

	builder.NewFunctionBuilder().
		WithGoModuleFunction(stackRestoreFn, []api.ValueType{i32, i64}, []api.ValueType{}).
		Export("stack_restore")

	builder.NewFunctionBuilder().
		WithGoModuleFunction(procIDFn, []api.ValueType{i32}, []api.ValueType{i32}).
		Export("proc_id")

	builder.NewFunctionBuilder().
		WithGoModuleFunction(threadExitFn, []api.ValueType{i32}, []api.ValueType{}).
		Export("thread_exit")

	builder.NewFunctionBuilder().
		WithGoModuleFunction(threadSignalFn, []api.ValueType{i32, i32}, []api.ValueType{i32}).
		Export("thread_signal")
}

var callbackSignalFn = api.GoModuleFunc(func(_ context.Context, _ api.Module, _ []uint64) {
	// We do not execute any signals against the wasm module so know this is never called.
	panic("callback_signal")
})

var futexWaitFn = api.GoModuleFunc(func(_ context.Context, _ api.Module, _ []uint64) {
	// We do not execute the wasm module concurrently so know this is never called.
	panic("futex_wait")
})

var futexWakeFn = api.GoModuleFunc(func(_ context.Context, _ api.Module, _ []uint64) {
	// We do not execute the wasm module concurrently so know this is never called.
	panic("futex_wake")
})

var futexWakeAllFn = api.GoModuleFunc(func(_ context.Context, _ api.Module, _ []uint64) {
	// We do not execute the wasm module concurrently so know this is never called.
	panic("futex_wake_all")
})

var procIDFn = api.GoModuleFunc(func(_ context.Context, m api.Module, stack []uint64) {
	resPtr := uint32(stack[0])
	m.Memory().WriteUint32Le(resPtr, 1)
	stack[0] = 0
})

var stackCheckpointFn = api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
	snapshotPtr := stack[0]
	retValPtr := stack[1]
	d := ctx.Value(wasixDataKey{}).(*wasixData) //nolint:forcetypeassert // Private implementation detail: BackgroundContext always seeds this key.

	// We go ahead and save the entire C-stack for now
	cstackPointer := uint32(mod.ExportedGlobal("__stack_pointer").Get())
	cstackTop := uint32(mod.ExportedGlobal("__heap_base").Get())
	cstackView, ok := mod.Memory().Read(cstackPointer, cstackTop-cstackPointer)
	if !ok {
		panic("read failed")
	}
	cstack := make([]byte, len(cstackView))
	copy(cstack, cstackView)

	sc := experimental.GetSnapshotter(ctx)
	s := sc.Snapshot()

	idx := len(d.checkpoints)
	d.checkpoints = append(d.checkpoints, wasixCheckpoint{
		snapshot:      s,
		retValPtr:     uint32(retValPtr),
		cstackPointer: cstackPointer,
		cstack:        cstack,
	})

	// pub struct StackSnapshot {
	//    pub user: u64,
	//    pub hash: u128,
	// }
	if !mod.Memory().WriteUint64Le(uint32(snapshotPtr), uint64(idx)) {
		panic("write failed")
	}
	if !mod.Memory().WriteUint64Le(uint32(retValPtr), 0) {
		panic("write failed")
	}

	stack[0] = 0
})

var stackRestoreFn = api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
	snapshotPtr := stack[0]
	ret := stack[1]

	snapshotIdx, ok := mod.Memory().ReadUint64Le(uint32(snapshotPtr))
	if !ok {
		panic("read failed")
	}

	d := ctx.Value(wasixDataKey{}).(*wasixData) //nolint:forcetypeassert // Private implementation detail: BackgroundContext always seeds this key.
	c := d.checkpoints[snapshotIdx]

	mod.ExportedGlobal("__stack_pointer").(api.MutableGlobal).Set(uint64(c.cstackPointer)) //nolint:forcetypeassert // Private implementation detail: __stack_pointer is a mutable global in this module.
	mod.Memory().Write(c.cstackPointer, c.cstack)

	mod.Memory().WriteUint64Le(c.retValPtr, ret)
	stack[0] = 0
	c.snapshot.Restore(stack[:1])
})

var threadExitFn = api.GoModuleFunc(func(_ context.Context, _ api.Module, _ []uint64) {
	panic("thread_exit")
})

var threadSignalFn = api.GoModuleFunc(func(_ context.Context, _ api.Module, _ []uint64) {
	panic("thread_signal")
})

type wasixCheckpoint struct {
	snapshot      experimental.Snapshot
	retValPtr     uint32
	cstackPointer uint32
	cstack        []byte
}

type wasixData struct {
	checkpoints []wasixCheckpoint
}

type wasixDataKey struct{}

// backgroundContext is the context of one call into the parser: it carries
// the snapshotter and the call's checkpoints.
func backgroundContext() context.Context {
	ctx := context.Background()
	ctx = experimental.WithSnapshotter(ctx)
	return context.WithValue(ctx, wasixDataKey{}, &wasixData{})
}
