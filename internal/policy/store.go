package policy

import (
	"net/url"
	"strings"
)

// validateStore checks settings.store: empty, "sqlite", or a postgres://
// URL without a password. The policy file is meant to be read by anyone
// who wants to know the rules, agents included, so it must not hold the
// database's password: a passfile, or $OVERSEER_DATABASE_URL in the
// daemon's own environment, carries it.
func validateStore(d *diag, dc *decoder, s *Settings) {
	line := dc.line("settings.store")
	switch {
	case s.Store == "" || s.Store == "sqlite":
		return
	case !strings.HasPrefix(s.Store, "postgres://") && !strings.HasPrefix(s.Store, "postgresql://"):
		d.errorf(line, "settings.store: want sqlite or a postgres:// URL")
		return
	}
	u, err := url.Parse(s.Store)
	if err != nil {
		d.errorf(line, "settings.store: the URL does not parse")
		return
	}
	_, hasPass := u.User.Password()
	if hasPass || u.Query().Has("password") {
		d.errorf(line, "settings.store: the URL holds a password, which anyone who can read the policy could use; "+
			"give it in a passfile (passfile=...) or in $OVERSEER_DATABASE_URL of the daemon's environment")
	}
}
