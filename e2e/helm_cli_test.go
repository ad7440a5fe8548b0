package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// capabilitiesTemplate renders what `helm template` believes of the cluster and of itself.
const capabilitiesTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: capabilities
data:
  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}
  kubeMinor: {{ .Capabilities.KubeVersion.Minor | quote }}
  helmVersion: {{ .Capabilities.HelmVersion.Version | quote }}
`

// bin/helm is the Helm of versions.mk, and `helm template` (what the manifest-generator runs)
// renders for the Kubernetes minor of the pinned kube-apiserver.
func TestHelmCLI(t *testing.T) {
	g := NewWithT(t)
	versions := toolVersions(t)
	helm := filepath.Join(binDir, "helm")

	out, err := exec.Command(helm, "version", "--short").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	version, _, _ := strings.Cut(strings.TrimSpace(string(out)), "+")
	g.Expect(version).To(Equal(versions["HELM_VERSION"]), "bin/helm is stale: run make tools")

	dir := filepath.Join(t.TempDir(), "caps")
	testserver.WriteChartDir(t, dir, testserver.ChartSpec{Name: "caps", Version: "0.1.0",
		Files: map[string]string{testserver.ConfigMapTemplateName: capabilitiesTemplate}})
	cmd := exec.Command(helm, "template", "rel", dir)
	// An empty Helm home: no user repositories, plugins or cache bear on the rendering.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	out, err = cmd.Output()
	g.Expect(err).NotTo(HaveOccurred())
	var cm struct{ Data map[string]string }
	g.Expect(yaml.Unmarshal(out, &cm)).To(Succeed(), string(out))
	minor := versions["HELM_KUBE_MINOR"]
	g.Expect(cm.Data).To(Equal(map[string]string{
		"kubeVersion": "v1." + minor + ".0",
		"kubeMinor":   minor,
		"helmVersion": versions["HELM_VERSION"],
	}))

	// HELM_KUBE_MINOR is the minor of the kube-apiserver the tests run.
	toolsMod, err := os.ReadFile(filepath.Join(env.Root, "e2e", "tools", "go.mod"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(toolsMod)).To(MatchRegexp(`(?m)^\s*k8s\.io/kubernetes v1\.` + minor + `\.\d+$`))
	// And what Helm at HELM_VERSION renders for, wherever it is built from its own go.mod.
	g.Expect(helmClientGoMinor(t, versions["HELM_VERSION"])).To(Equal(minor))
}

// helmClientGoMinor is the Kubernetes minor Helm at version renders for when built from its
// own go.mod (go install helm.sh/helm/v4/cmd/helm@version, as make tools and the
// manifest-generator image do): Helm 4 takes it from the k8s.io/client-go it is linked with,
// v0.N giving 1.N.
func helmClientGoMinor(t *testing.T, version string) string {
	t.Helper()
	g := NewWithT(t)
	cmd := exec.Command("go", "mod", "download", "-json", "helm.sh/helm/v4@"+version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	g.Expect(err).NotTo(HaveOccurred(), "go mod download helm.sh/helm/v4@%s: %s", version, out)
	var mod struct{ GoMod string }
	g.Expect(json.Unmarshal(out, &mod)).To(Succeed())
	gomod, err := os.ReadFile(mod.GoMod)
	g.Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/client-go v0\.(\d+)\.\d+`).FindSubmatch(gomod)
	g.Expect(m).NotTo(BeNil(), "Helm %s's go.mod requires no k8s.io/client-go", version)
	return string(m[1])
}
