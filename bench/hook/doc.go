// Package hook measures the latency an agent sees from Overseer's hook: the
// whole process — start, read the event, ask the daemon, print the answer —
// for an action the policy lets through (auto), as `overseer init` installs
// it (the lean entry overseer-hook, which hands the call to `overseer hook`
// when no daemon runs) and as `overseer hook` run directly, against a bare
// Go program that reads the event and prints a decision and a process that
// does nothing (`true`), in one run. Goals: with and without a daemon at
// most 3x the bare Go hook; without a daemon at most 24 ms. run.sh runs the
// benchmark and prints the medians and ratios.
package hook
