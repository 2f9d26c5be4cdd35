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
