// Package bench measures Overseer against its speed goals: the latency of
// Engine.Evaluate for a typical action against a 100-rule policy (compared
// with the same rules written in Rego and evaluated by OPA, in the separate
// module bench/opa), durable audit appends per second, and the throughput
// of POST /api/v1/actions (cmd/apiload). The measurements are Benchmark
// functions; run.sh runs them all and prints a summary with the goals.
//
// The rule set lives in testdata/rules100.json, in a neutral form that both
// sides render: this package to a YAML policy with CEL conditions, bench/opa
// to a Rego module. Its cases fix the level and the deciding rule each
// engine must give, so the two measure the same decisions.
package bench
