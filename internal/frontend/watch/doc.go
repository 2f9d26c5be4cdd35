// Package watch is the terminal-prompt watcher (`overseer watch tmux`): it
// reads the panes of a tmux server, recognises the permission prompts of the
// coding agents running in them (Claude Code, Codex CLI, Gemini CLI) and
// generic terminal confirmations, extracts what each prompt asks about into
// an Action, lets the firewall judge it exactly as for a hook, and types the
// answer — or leaves the prompt to a person.
//
// The recognisers are data (recognisers.yaml); the code holds only the
// mechanisms: reading a screen, finding a prompt at the bottom of the pane,
// extracting its subject, and the safety rules for typing into a pane
// (stable across two captures, selection where expected, re-captured after
// the keys, rate-limited). Anything uncertain is left for a person.
package watch
