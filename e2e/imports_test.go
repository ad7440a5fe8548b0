package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

const modulePrefix = "github.com/sluice-gitops/sluice/"

// Controllers talk only through the API and artifact URLs: no controller module may import
// another controller module, in its code or its tests.
func TestNoControllerImportsAnotherController(t *testing.T) {
	for _, name := range harness.Controllers {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", "./...")
			cmd.Dir = filepath.Join(env.Root, name)
			out, err := cmd.CombinedOutput()
			g.Expect(err).NotTo(HaveOccurred(), string(out))
			for _, pkg := range strings.Fields(string(out)) {
				if !strings.HasPrefix(pkg, modulePrefix) {
					continue
				}
				module, _, _ := strings.Cut(strings.TrimPrefix(pkg, modulePrefix), "/")
				g.Expect(module).To(BeElementOf(name, "shared"), "%s imports %s", name, pkg)
			}
		})
	}
}

// API packages are imported by every consumer of the APIs (other controllers' tests, CLIs,
// Flux users' tools): they may import apimachinery, controller-runtime's scheme builder and the
// shared API types (gatesapi, and history for status.history), never runtime code such as
// controller-runtime's builder or the evaluation of gates.
func TestAPIPackagesImportNoRuntimeCode(t *testing.T) {
	for _, name := range harness.Controllers {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./api/...")
			cmd.Dir = filepath.Join(env.Root, name)
			out, err := cmd.CombinedOutput()
			g.Expect(err).NotTo(HaveOccurred(), string(out))
			for _, pkg := range strings.Fields(string(out)) {
				switch {
				case strings.HasPrefix(pkg, "sigs.k8s.io/controller-runtime/"):
					g.Expect(pkg).To(Equal("sigs.k8s.io/controller-runtime/pkg/scheme"), "the API of %s imports %s", name, pkg)
				case strings.HasPrefix(pkg, modulePrefix):
					g.Expect(pkg).To(Or(HavePrefix(modulePrefix+name+"/api/"), Equal(modulePrefix+"shared/gatesapi"),
						Equal(modulePrefix+"shared/history")),
						"the API of %s imports %s", name, pkg)
				}
			}
		})
	}
}
