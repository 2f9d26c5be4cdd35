package tracked

import "testing"

func TestConfigValue(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"[core]\n\thooksPath = tools/hooks\n", "tools/hooks"},
		{"[Core]\n\tHooksPath=\"my hooks\" # comment\n", "my hooks"},
		{"[core] hookspath = inline\n", "inline"},
		{"[core]\n\thooksPath = a\n[core]\n\thooksPath = b\n", "b"},
		{"[core \"x\"]\n\thooksPath = sub\n", ""},
		{"[remote \"origin\"]\n\thooksPath = no\n", ""},
		{"; [core]\n# hooksPath = no\n", ""},
		{"[core]\n\thooksPath = a\\\"b ; c\n", "a\"b"},
		{"[extensions]\n\tobjectFormat = sha256\n", ""},
	} {
		if got := ConfigValue(c.text, "core", "hookspath"); got != c.want {
			t.Errorf("%q: %q, want %q", c.text, got, c.want)
		}
	}
}
