package web

import "net/http"

// The Tasks page reads and aborts tasks through the same handlers as the
// HTTP API (httpapi.Tasks), behind the console's session; an abort also
// needs the session's CSRF token.

func (c *Console) apiTasks(w http.ResponseWriter, r *http.Request, _ *session) { c.tasks.List(w, r) }

func (c *Console) apiTask(w http.ResponseWriter, r *http.Request, _ *session) { c.tasks.Get(w, r) }

func (c *Console) apiTaskAbort(w http.ResponseWriter, r *http.Request, s *session) {
	who := "web"
	if s != nil && s.Who != "" {
		who = s.Who
	}
	c.tasks.AbortAs(w, r, who, "web")
}
