package mcptool

// PIDs returns the process of each running stdio server, by name.
func (c *Client) PIDs() map[string]int {
	out := map[string]int{}
	for name, s := range c.servers {
		s.mu.Lock()
		if s.sess != nil && s.sess.pid > 0 && !s.sess.ended() {
			out[name] = s.sess.pid
		}
		s.mu.Unlock()
	}
	return out
}
