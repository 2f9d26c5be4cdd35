package autorule

// Template is a ready-made set of auto-rules a person can add at once.
type Template struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Rules       []Rule `json:"rules"`
}

// Templates are the seed's ready-made rules: night mode and weekend safety.
func Templates() []Template {
	return []Template{
		{
			Name:  "night-mode",
			Title: "Night mode",
			Description: "From 22:00 to 06:00 nobody answers: shell commands are blocked, file deletions are " +
				"blocked, and a burst of writes tells people.",
			Rules: []Rule{
				{Name: "night mode: no shell", Trigger: Trigger{Type: TriggerTime, Tool: "shell", From: "22:00", To: "06:00"},
					Action: Action{Type: ActBlockTool}, Priority: 10, Enabled: true},
				{Name: "night mode: no deletions", Trigger: Trigger{Type: TriggerTime, Tool: "file_delete", From: "22:00", To: "06:00"},
					Action: Action{Type: ActBlockTool}, Priority: 10, Enabled: true},
				{Name: "night mode: tell about many writes", Trigger: Trigger{Type: TriggerCount, Tool: "file_write", Count: 20, WindowMinutes: 10},
					Action: Action{Type: ActNotify}, Priority: 50, Enabled: true},
			},
		},
		{
			Name:  "weekend-safety",
			Title: "Weekend safety",
			Description: "On Saturdays and Sundays network fetches and SQL need a person's approval, and an " +
				"agent whose calls keep failing is paused.",
			Rules: []Rule{
				{Name: "weekend: approve fetches", Trigger: Trigger{Type: TriggerTime, Tool: "net_fetch", From: "00:00", To: "24:00", Days: []string{"sat", "sun"}},
					Action: Action{Type: ActRequireApproval}, Priority: 20, Enabled: true},
				{Name: "weekend: approve SQL", Trigger: Trigger{Type: TriggerTime, Tool: "sql", From: "00:00", To: "24:00", Days: []string{"sat", "sun"}},
					Action: Action{Type: ActRequireApproval}, Priority: 20, Enabled: true},
				{Name: "weekend: pause a failing agent", Trigger: Trigger{Type: TriggerErrors, Percent: 50, MinCalls: 10, WindowMinutes: 30},
					Action: Action{Type: ActPauseAgent, Notify: true}, Priority: 30, Enabled: true},
			},
		},
	}
}

// TemplateByName returns a template, or false.
func TemplateByName(name string) (Template, bool) {
	for _, t := range Templates() {
		if t.Name == name {
			return t, true
		}
	}
	return Template{}, false
}
