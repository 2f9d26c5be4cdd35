// Package hook measures the latency an agent sees from `overseer hook`: the
// whole process — start, read the event, ask the daemon, print the answer —
// for an action the policy lets through (auto), against a process that does
// nothing (`true`), in one run. The goal is a median under 15 ms. run.sh
// runs the benchmark and prints both medians and their difference.
package hook
