// Package tamper holds the audit log's tamper suite and its SIGKILL loop
// (tests only): a real daemon writes a real log, a separate attacker
// process with every file and the live sealing key tampers with it, and
// `overseer audit verify` must name what it did. See docs/threat-model.md.
package tamper
