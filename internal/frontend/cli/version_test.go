package cli

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		name, ldflags string
		bi            *debug.BuildInfo
		want          string
	}{
		{"ldflags win", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}}, "v1.2.3"},
		{"go install @version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0"},
		{"built from the repository", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125041557-f62a08971502"},
			Settings: vcs("f62a08971502cdc6b4abbdf3285f907d88fd51e9", "false")}, "v0.0.0-20261125041557-f62a08971502"},
		{"a dirty tree", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125041557-f62a08971502"},
			Settings: vcs("f62a08971502cdc6b4abbdf3285f907d88fd51e9", "true")}, "v0.0.0-20261125041557-f62a08971502+dirty"},
		{"an older toolchain: the revision", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("f62a08971502cdc6b4abbdf3285f907d88fd51e9", "true")}, "f62a08971502-dirty"},
		{"no version control information", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{"no build information", "dev", nil, "devel"},
	} {
		if got := versionOf(c.ldflags, c.bi); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
