package archtest

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/overseer-dev/overseer"

type pkg struct {
	ImportPath string
	Doc        string
	Deps       []string
	Name       string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkg
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// kernelPrefixes are the kernel's packages. internal/kernel wires them and
// may import the guards, but nothing in the kernel imports a plugin or a
// front end.
var kernelPrefixes = []string{
	"/internal/action", "/internal/firewall", "/internal/policy", "/internal/guard", "/internal/gate",
	"/internal/perception", "/internal/audit", "/internal/store", "/internal/kernel", "/internal/clock",
	"/internal/autorule",
}

var forbidden = []string{"/plugins/", "/internal/frontend/", "/internal/agent"}

func isKernel(path string) bool {
	for _, p := range kernelPrefixes {
		if strings.HasPrefix(path, module+p) {
			return true
		}
	}
	return false
}

func TestKernelImportsNoPluginOrFrontEnd(t *testing.T) {
	checked := 0
	for _, p := range listPackages(t) {
		if !isKernel(p.ImportPath) {
			continue
		}
		checked++
		for _, d := range p.Deps {
			for _, f := range forbidden {
				if strings.HasPrefix(d, module+f) || d == module+strings.TrimSuffix(f, "/") {
					t.Errorf("kernel package %s depends on %s", p.ImportPath, d)
				}
			}
		}
	}
	if checked < 8 {
		t.Fatalf("checked only %d kernel packages", checked)
	}
}

func TestEveryPackageHasDoc(t *testing.T) {
	for _, p := range listPackages(t) {
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("package %s has no doc comment", p.ImportPath)
		}
	}
}

// sizeForbidden are packages the release binary must not link, each for
// its cost (see bench/size.sh): executing a text/template or html/template
// calls methods by reflection, which makes the linker keep every exported
// method of every type (4.5 MB); the Prometheus client and go-pgquery's
// uncompressed parser module have lighter replacements in the tree.
var sizeForbidden = map[string]string{
	"html/template": "render pages as internal/frontend/web does (pages.go)",
	"github.com/prometheus/client_golang/prometheus":          "use internal/frontend/metrics",
	"github.com/wasilibs/go-pgquery/parser":                   "use internal/guard/sqlguard/pgquery",
	"github.com/prometheus/client_golang/prometheus/promhttp": "use internal/frontend/metrics",
}

// TestReleaseBinaryLinksNoHeavyPackage: cmd/overseer depends on none of
// sizeForbidden, and no package of ours imports text/template (libraries
// link it, but only parse with it; bench/size.sh reports whether a
// reflective method call is reachable).
func TestReleaseBinaryLinksNoHeavyPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/cmd/overseer").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		if why, ok := sizeForbidden[d]; ok {
			t.Errorf("the release binary links %s: %s", d, why)
		}
	}
	out, err = exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if imp == "text/template" || imp == "html/template" {
				t.Errorf("%s imports %s: executing templates keeps every method of every type in the binary", f[0], imp)
			}
		}
	}
}
