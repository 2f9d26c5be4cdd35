package egress

import (
	"regexp"
	"testing"
)

// secretEnvNameRE is secretEnvName's expression, compiled as it is.
var secretEnvNameRE = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSW|PWD$|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION|DSN$|DATABASE_URL|_URI$|WEBHOOK)`)

var envNameCases = []string{
	"GITHUB_TOKEN", "github_token", "AWS_SECRET_ACCESS_KEY", "api_key", "ApiKey", "PASSWORD", "DB_PASSWD", "PGPASSWORD",
	"PWD", "OLDPWD", "PWDX", "MY_PWD", "SENTRY_DSN", "DSN_HOST", "MONGO_URI", "URI_BASE", "_URI", "DATABASE_URL",
	"SLACK_WEBHOOK_URL", "AUTHOR", "PRIVATE_KEY_PATH", "COOKIE_JAR", "XDG_SESSION_TYPE", "HOME", "PATH", "LANG",
	"TERM", "", "K", "KE", "keY", "tOkEn_", "SSH_AUTH_SOCK", "CREDENTIALS_FILE", "X_DATABASE_URL_Y",
	"\u212aEY", "SE\u017fSION", "café_token", "ÄPI_KEY", "pwd\n", "DSN\x00", "_uri",
}

// TestSecretEnvNameMatchesItsExpression: the matcher without the regexp
// engine says what the expression says, for ASCII names and others
// (Unicode's case folding: the Kelvin sign is a k, the long s an s).
func TestSecretEnvNameMatchesItsExpression(t *testing.T) {
	for _, n := range envNameCases {
		if got, want := secretEnvName.MatchString(n), secretEnvNameRE.MatchString(n); got != want {
			t.Errorf("%q: %v, the expression says %v", n, got, want)
		}
	}
	if !secretEnvName.MatchString("GITHUB_TOKEN") || secretEnvName.MatchString("HOME") {
		t.Fatal("the matcher does not tell a token from HOME")
	}
}

func FuzzSecretEnvName(f *testing.F) {
	for _, n := range envNameCases {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n string) {
		if got, want := secretEnvName.MatchString(n), secretEnvNameRE.MatchString(n); got != want {
			t.Fatalf("%q: %v, the expression says %v", n, got, want)
		}
	})
}
