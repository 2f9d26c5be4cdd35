package policy

import (
	"strings"
	"testing"
)

func TestStoreSetting(t *testing.T) {
	for _, tc := range []struct{ name, store, want string }{
		{"default", "", ""},
		{"sqlite", "sqlite", ""},
		{"postgres", "postgres://overseer@db.internal:5432/overseer?sslmode=verify-full&passfile=/etc/overseer/pgpass", ""},
		{"postgresql scheme", "postgresql://overseer@db/overseer", ""},
		{"password in the user part", "postgres://overseer:hunter2@db/overseer", "the URL holds a password"},
		{"password in the query", "postgres://overseer@db/overseer?password=hunter2", "the URL holds a password"},
		{"other scheme", "mysql://db/overseer", "want sqlite or a postgres:// URL"},
		{"a path", "/var/lib/overseer.db", "want sqlite or a postgres:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("s.yaml", []byte("settings:\n  store: '"+tc.store+"'\n"), Options{})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p.Settings.Store != tc.store {
					t.Fatalf("store %q, want %q", p.Settings.Store, tc.store)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), ":2: settings.store: "+tc.want) {
				t.Fatalf("%v, want an error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error repeats the password: %v", err)
			}
		})
	}
}
