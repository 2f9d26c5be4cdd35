package action

import "testing"

func TestCommandSub(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"git", []string{"push", "origin", "main"}, "push"},
		{"git", []string{"-C", "../lib", "push", "--force"}, "push"},
		{"git", []string{"-c", "core.sshCommand=ssh", "--no-pager", "push"}, "push"},
		{"git", []string{"--git-dir", "../x/.git", "--work-tree", "push", "status"}, "status"}, // a directory named push
		{"git", []string{"--git-dir=../x/.git", "push"}, "push"},
		{"git", []string{"stash", "push", "-m", "wip"}, "stash"},
		{"git", []string{"commit", "-m", "push"}, "commit"},
		{"git", []string{"-C", `"$DIR"`, "push"}, "push"},
		{"git", []string{`$SUB`, "origin"}, `$SUB`},
		{"git", []string{"--version"}, ""},
		{"git", nil, ""},
		{"npm", []string{"--prefix", "web", "publish"}, "web"}, // not listed: a separate value is taken for the subcommand
		{"kubectl", []string{"get", "pods"}, "get"},
	} {
		if got := (Command{Name: c.name, Args: c.args}).Sub(); got != c.want {
			t.Errorf("%s %q: sub %q, want %q", c.name, c.args, got, c.want)
		}
	}
}
