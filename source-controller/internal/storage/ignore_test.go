package storage

import (
	"maps"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
)

func TestIgnoreFilter(t *testing.T) {
	ptr := func(s string) *string { return &s }
	tests := []struct {
		name       string
		files      map[string]string
		specIgnore *string
		want       []string // archived regular files
	}{
		{
			name: "defaults exclude VCS, CI and binary files",
			files: map[string]string{
				".git/config": "", ".git/objects/ab/cd": "", ".gitignore": "", ".gitmodules": "", ".gitattributes": "",
				".github/workflows/ci.yaml": "", ".circleci/config.yml": "", ".travis.yml": "", ".gitlab-ci.yml": "",
				"appveyor.yml": "", ".drone.yml": "", "cloudbuild.yaml": "", "codeship-services.yml": "",
				"codeship-steps.yml": "", "img/logo.png": "", "img/a.jpg": "", "img/b.jpeg": "", "img/c.gif": "",
				"v.wmv": "", "v.flv": "", "dist/bundle.tar.gz": "", "dist/bundle.zip": "",
				"sub/.git/HEAD": "", "sub/.github/x.yaml": "",
				"deploy/app.yaml": "", "README.md": "", ".sops.yaml": "", ".goreleaser.yml": "",
			},
			want: []string{".goreleaser.yml", ".sops.yaml", "README.md", "deploy/app.yaml"},
		},
		{
			name: ".git stays out whatever .sourceignore and spec.ignore say",
			files: map[string]string{
				".sourceignore": "!.git/\n!.git\n!**/.git/**\n",
				".git/config":   "[remote \"origin\"]\n\turl = https://user:token@example.com/repo\n", ".git/HEAD": "",
				"sub/.git": "gitdir: ../.git/modules/sub\n", "app.yaml": "",
			},
			specIgnore: ptr("!.git/\n!/.git/config\n"),
			want:       []string{".sourceignore", "app.yaml"},
		},
		{
			name: "nested .sourceignore applies to its directory only",
			files: map[string]string{
				".sourceignore":   "*.txt\n",
				"a/.sourceignore": "# comment\n\nsecret.yaml\n/local.yaml\n",
				"a/secret.yaml":   "", "a/deep/secret.yaml": "", "b/secret.yaml": "",
				"a/local.yaml": "", "a/deep/local.yaml": "", "local.yaml": "",
				"c.txt": "", "a/x.txt": "", "a/ok.yaml": "",
			},
			want: []string{".sourceignore", "a/.sourceignore", "a/deep/local.yaml", "a/ok.yaml", "b/secret.yaml", "local.yaml"},
		},
		{
			name: "negation, and a child .sourceignore overrides its parent",
			files: map[string]string{
				".sourceignore": "*.yaml\n!keep.yaml\n",
				"keep.yaml":     "", "drop.yaml": "",
				"c/.sourceignore": "!child.yaml\n",
				"c/child.yaml":    "", "c/other.yaml": "", "d/child.yaml": "",
			},
			want: []string{".sourceignore", "c/.sourceignore", "c/child.yaml", "keep.yaml"},
		},
		{
			name: "directory patterns exclude whole trees",
			files: map[string]string{
				".sourceignore": "docs/\n/build\n",
				"docs/a.md":     "", "x/docs/b.md": "", "build/out": "", "x/build/out": "", "docs.md": "",
			},
			want: []string{".sourceignore", "docs.md", "x/build/out"},
		},
		{
			name:       "spec.ignore comes after the defaults and .sourceignore files",
			files:      map[string]string{".sourceignore": "*.md\n", "README.md": "", "docs/x.yaml": "", "app.yaml": "", "logo.png": "", ".github/ci.yaml": ""},
			specIgnore: ptr("# docs are not deployed\n/docs/\n!README.md\r\n!logo.png\n"),
			want:       []string{".sourceignore", "README.md", "app.yaml", "logo.png"},
		},
		{
			name:       "empty spec.ignore keeps the defaults",
			files:      map[string]string{".git/HEAD": "", "app.yaml": ""},
			specIgnore: ptr(""),
			want:       []string{"app.yaml"},
		},
		{
			name: ".flux.yaml is never excluded",
			files: map[string]string{
				".sourceignore": "*.yaml\n.flux.yaml\n",
				".flux.yaml":    "", "app.yaml": "",
				"apps/.flux.yaml": "", "apps/x.yaml": "",
				"docs/.flux.yaml": "", "docs/readme.md": "", "docs/deep/more.md": "",
				".github/.flux.yaml": "", ".github/ci.yml": "",
			},
			specIgnore: ptr("/docs/\n**/.flux.yaml\n"),
			want:       []string{".flux.yaml", ".github/.flux.yaml", ".sourceignore", "apps/.flux.yaml", "docs/.flux.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			filter, err := IgnoreFilter(dir, tt.specIgnore)
			g.Expect(err).NotTo(HaveOccurred())

			s := newTestStorage(t, Options{})
			a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "rev.tar.gz")
			g.Expect(s.Archive(&a, dir, filter)).To(Succeed())
			got := slices.Sorted(maps.Keys(archivedFiles(t, s, a)))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestIgnoreFilterMissingDir(t *testing.T) {
	g := NewWithT(t)
	_, err := IgnoreFilter(t.TempDir()+"/missing", nil)
	g.Expect(err).To(HaveOccurred())
}
