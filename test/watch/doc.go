// Package watch holds the end-to-end tests of `overseer watch tmux`: the
// real agent CLIs (Claude Code, Codex CLI, Gemini CLI) in a private tmux
// server, with their own permission prompts on and no Overseer hook,
// against scripted model servers; and the recorder of the watcher's
// fixture screens (go test ./test/watch -run TestRecordScreens -record).
package watch
