// Package agents holds the end-to-end tests of Overseer's agent hooks with
// the real agent CLIs: Claude Code, Codex and Gemini CLI run offline against
// scripted model servers (package modeltest), with hooks installed by
// `overseer init`, and every tool call they make goes through `overseer
// hook`.
//
// The CLIs are installed by scripts/install-agent-clis.sh into .cache/npm.
// When one is missing the tests are skipped with a message, except in CI
// (CI=true), where a missing CLI fails them.
//
// Safety: no test depends on a guard to protect the machine it runs on. The
// "dangerous" commands remove victims in temporary directories only.
package agents
