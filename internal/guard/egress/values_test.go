package egress

import (
	"slices"
	"testing"
)

func TestEnvValues(t *testing.T) {
	got := envValues([]string{
		"GITHUB_TOKEN=ghp_C3N8FeKjFTrKCb0Tz8BbwTKx8EqwtHmcOJEZ",
		"DATABASE_URL=postgres://app:Hq8zN2vL5xR7tW3k@db/prod",
		"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
		"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus",
		"PATH=/usr/bin", "KEYBOARD_LAYOUT=us", "API_KEY=changeme", "MAX_TOKENS=4096", "USE_AUTH=true",
	})
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"DATABASE_URL", "GITHUB_TOKEN"}) {
		t.Fatalf("secret variables %v", names)
	}
	if !slices.Contains(got["DATABASE_URL"], "Hq8zN2vL5xR7tW3k") {
		t.Errorf("the URL's password is not a value: %q", got["DATABASE_URL"])
	}
}
