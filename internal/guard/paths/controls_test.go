package paths

import "testing"

// Python's start-up files are control files wherever a site-packages or
// dist-packages directory holds them; the same names elsewhere are not.
func TestPythonStartupFiles(t *testing.T) {
	for p, want := range map[string]bool{
		"/home/u/.local/lib/python3.12/site-packages/zz.pth":               true,
		"/home/u/proj/.venv/lib/python3.12/site-packages/sitecustomize.py": true,
		"/usr/lib/python3/dist-packages/usercustomize.py":                  true,
		"/home/u/proj/.venv/lib/python3.12/site-packages/pkg/x.pth":        true,
		"/home/u/proj/src/zz.pth":                                          false,
		"/home/u/proj/src/sitecustomize.py":                                false,
		"/home/u/proj/site-packages.pth":                                   false,
		"/home/u/proj/.venv/lib/python3.12/site-packages/pkg/mod.py":       false,
		"/home/u/proj/.venv/lib/python3.12/site-packages/a.pth.txt":        false,
	} {
		if got := isPythonStartup(p); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
}
