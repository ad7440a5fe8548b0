package fluxyaml

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".flux.yaml":                  "root",
		"staging/app.yaml":            "",
		"production/.flux.yaml":       "production",
		"production/eu/west/app.yaml": "",
		"clusters/a/b/c/app.yaml":     "",
		"clusters/a/b/.flux.yaml":     "b",
		"clusters/a/b/c/d/.flux.yaml": "below the target",
	})

	tests := []struct {
		target string
		want   string
	}{
		{"staging", ".flux.yaml"},
		{"./staging/", ".flux.yaml"},
		{"/staging", ".flux.yaml"},
		{".", ".flux.yaml"},
		{"", ".flux.yaml"},
		{"production", "production/.flux.yaml"},
		{"production/eu/west", "production/.flux.yaml"},
		{"clusters/a/b/c", "clusters/a/b/.flux.yaml"},
		{"clusters/a", ".flux.yaml"},
		{"staging/../production", "production/.flux.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			g := NewWithT(t)
			got, found, err := Find(root, tt.target)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(BeTrue())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestFindNotFound(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"apps/app.yaml":          "",
		"apps/nested/.flux.yaml": "below the target: never used",
	})
	got, found, err := Find(root, "apps")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeFalse())
	g.Expect(got).To(BeEmpty())
}

func TestFindRefusesPathsOutsideRoot(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "artifact")
	writeTree(t, parent, map[string]string{
		".flux.yaml":               "outside the artifact",
		"secret/.flux.yaml":        "outside the artifact",
		"artifact/apps/app.yaml":   "",
		"artifact/other/file.yaml": "",
	})
	// A symlinked target and a symlinked .flux.yaml pointing out of root.
	if err := os.Symlink(filepath.Join(parent, "secret"), filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(parent, "secret", ".flux.yaml"), filepath.Join(root, "other", ".flux.yaml")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		target string
		err    string
	}{
		{"..", "outside the artifact root"},
		{"../secret", "outside the artifact root"},
		{"apps/../../secret", "outside the artifact root"},
		{"/../secret", "outside the artifact root"},
		{"escape", "escapes"},
		{"other", "escapes"},
		{"missing", `path "missing" not found`},
		{"apps/app.yaml", "is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			g := NewWithT(t)
			_, found, err := Find(root, tt.target)
			g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
			g.Expect(found).To(BeFalse())
		})
	}

	// The root's own parent is never consulted.
	got, found, err := Find(root, "apps")
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeFalse(), "found %s", got)
}

func TestTargetDir(t *testing.T) {
	g := NewWithT(t)
	root := realTempDir(t)
	writeTree(t, root, map[string]string{"staging/app.yaml": "", "real/x.yaml": ""})
	g.Expect(os.Symlink("real", filepath.Join(root, "link"))).To(Succeed())
	g.Expect(os.Symlink(t.TempDir(), filepath.Join(root, "out"))).To(Succeed())

	dir, err := TargetDir(root, "./staging")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dir).To(Equal(filepath.Join(root, "staging")))

	dir, err = TargetDir(root, "link")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dir).To(Equal(filepath.Join(root, "real")))

	_, err = TargetDir(root, "out")
	g.Expect(err).To(HaveOccurred())
	_, err = TargetDir(root, "../x")
	g.Expect(err).To(MatchError(ContainSubstring("outside the artifact root")))
}

// ReadFile reads inside the root only: a symlink out of it is an error, not the file it names.
func TestReadFileStaysInTheRoot(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	g.Expect(os.WriteFile(outside, []byte("token"), 0o600)).To(Succeed())
	writeTree(t, root, map[string]string{"apps/app.yaml": "kind: ConfigMap\n"})
	g.Expect(os.Symlink(outside, filepath.Join(root, "apps", "link.yaml"))).To(Succeed())

	data, err := ReadFile(root, filepath.Join("apps", "app.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("kind: ConfigMap\n"))
	_, err = ReadFile(root, filepath.Join("apps", "link.yaml"))
	g.Expect(err).To(HaveOccurred())
	_, err = ReadFile(root, "../secret")
	g.Expect(err).To(HaveOccurred())
}
