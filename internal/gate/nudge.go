package gate

// Nudge makes this gate's waiters of approval id re-read it now: another
// process sharing the database changed it (see store.Watcher).
func (g *Gate) Nudge(id string) { g.wake(id) }

// NudgeAll makes every waiter of this gate re-read its approval now
// (changes by other processes may have been missed).
func (g *Gate) NudgeAll() {
	g.mu.Lock()
	ids := make([]string, 0, len(g.waiters))
	for id := range g.waiters {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	for _, id := range ids {
		g.wake(id)
	}
}
