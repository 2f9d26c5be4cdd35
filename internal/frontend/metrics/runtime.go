package metrics

import (
	"bufio"
	"runtime"
	"runtime/debug"
	runtimemetrics "runtime/metrics"
	"time"
)

// gauge and counter make a family of one unlabelled sample.
func gauge(name, help string, v float64) *family {
	return &family{name: name, help: help, typ: "gauge", write: func(w *bufio.Writer, name string) { sample(w, name, "", v) }}
}

func counter(name, help string, v float64) *family {
	return &family{name: name, help: help, typ: "counter", write: func(w *bufio.Writer, name string) { sample(w, name, "", v) }}
}

// runtimeFamilies are the Go runtime's series, as the official client's
// Go collector (its default set) names them.
func runtimeFamilies() []*family {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	threads, _ := runtime.ThreadCreateProfile(nil)
	rm := []runtimemetrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}, {Name: "/sched/gomaxprocs:threads"}}
	runtimemetrics.Read(rm)
	rmv := func(i int) float64 {
		if rm[i].Value.Kind() == runtimemetrics.KindUint64 {
			return float64(rm[i].Value.Uint64())
		}
		return 0
	}
	fams := []*family{
		{name: "go_gc_duration_seconds", help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.",
			typ: "summary", write: func(w *bufio.Writer, name string) {
				for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
					sample(w, name, `quantile="`+q+`"`, gc.PauseQuantiles[i].Seconds())
				}
				sample(w, name+"_sum", "", gc.PauseTotal.Seconds())
				sample(w, name+"_count", "", float64(gc.NumGC))
			}},
		gauge("go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100. Sourced from /gc/gogc:percent.", rmv(0)),
		gauge("go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64. Sourced from /gc/gomemlimit:bytes.", rmv(1)),
		gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine())),
		{name: "go_info", help: "Information about the Go environment.", typ: "gauge", write: func(w *bufio.Writer, name string) {
			sample(w, name, `version="`+escapeLabel(runtime.Version())+`"`, 1)
		}},
		gauge("go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", float64(ms.Alloc)),
		counter("go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", float64(ms.TotalAlloc)),
		gauge("go_memstats_buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table.", float64(ms.BuckHashSys)),
		counter("go_memstats_frees_total", "Total number of heap objects frees.", float64(ms.Frees)),
		gauge("go_memstats_gc_sys_bytes", "Number of bytes used for garbage collection system metadata.", float64(ms.GCSys)),
		gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes.", float64(ms.HeapAlloc)),
		gauge("go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used.", float64(ms.HeapIdle)),
		gauge("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", float64(ms.HeapInuse)),
		gauge("go_memstats_heap_objects", "Number of currently allocated objects.", float64(ms.HeapObjects)),
		gauge("go_memstats_heap_released_bytes", "Number of heap bytes released to OS.", float64(ms.HeapReleased)),
		gauge("go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system.", float64(ms.HeapSys)),
		gauge("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", float64(gc.LastGC.UnixNano())/1e9),
		counter("go_memstats_mallocs_total", "Total number of heap objects allocated, both live and gc-ed.", float64(ms.Mallocs)),
		gauge("go_memstats_mcache_inuse_bytes", "Number of bytes in use by mcache structures.", float64(ms.MCacheInuse)),
		gauge("go_memstats_mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system.", float64(ms.MCacheSys)),
		gauge("go_memstats_mspan_inuse_bytes", "Number of bytes in use by mspan structures.", float64(ms.MSpanInuse)),
		gauge("go_memstats_mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system.", float64(ms.MSpanSys)),
		gauge("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", float64(ms.NextGC)),
		gauge("go_memstats_other_sys_bytes", "Number of bytes used for other system allocations.", float64(ms.OtherSys)),
		gauge("go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments.", float64(ms.StackInuse)),
		gauge("go_memstats_stack_sys_bytes", "Number of bytes obtained from system for stack allocator.", float64(ms.StackSys)),
		gauge("go_memstats_sys_bytes", "Number of bytes obtained from system.", float64(ms.Sys)),
		gauge("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting. Sourced from /sched/gomaxprocs:threads.", rmv(2)),
		gauge("go_threads", "Number of OS threads created.", float64(threads)),
	}
	return fams
}
