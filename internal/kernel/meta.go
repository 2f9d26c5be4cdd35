package kernel

import (
	"github.com/overseer-dev/overseer/internal/firewall"
)

// NoteStagnation records that the own loop's session made no progress
// (note says how) and returns the strategy-switch instruction to put into
// the session's next prompt when this note reaches the policy's stagnation
// threshold (settings.metacognition.stagnation), "" otherwise. L5 answers
// stagnation first this way; only when the session stagnates again does
// the engine put its calls to a person.
func (k *Kernel) NoteStagnation(session, note string) string {
	k.Bus.RecordStagnation(session, note)
	threshold := k.Engine.Policy().Settings.Meta.Stagnation
	n := k.Bus.StagnationCount(session)
	if threshold <= 0 || n != threshold {
		return ""
	}
	return firewall.StrategySwitch(n, k.Bus.Snapshot(session).StagnationNotes)
}
