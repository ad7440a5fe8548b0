package fluxyaml

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseWorkload(t *testing.T) {
	g := NewWithT(t)
	w, err := ParseWorkload("default:deployment/foo")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w).To(Equal(Workload{Namespace: "default", Kind: "deployment", Name: "foo"}))

	for _, bad := range []string{"", "deployment/foo", "default:deployment", "default:/foo", "default:deployment/"} {
		_, err := ParseWorkload(bad)
		g.Expect(err).To(HaveOccurred(), bad)
	}
}

func TestSplitImage(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		image, name, tag, err string
	}{
		{image: "nginx:1.15", name: "nginx", tag: "1.15"},
		{image: "ghcr.io/stefanprodan/podinfo:6.5.0", name: "ghcr.io/stefanprodan/podinfo", tag: "6.5.0"},
		{image: "registry.local:5000/team/app:1.2", name: "registry.local:5000/team/app", tag: "1.2"},
		{image: "app:1.2@" + digest, name: "app", tag: "1.2@" + digest},
		{image: "registry.local:5000/app", err: "has no tag"},
		{image: "nginx", err: "has no tag"},
		{image: "nginx:", err: "has no tag"},
		{image: "app@" + digest, err: "has a digest but no tag"},
		{image: "app:1.2@sha256:short", err: "invalid digest"},
		{image: "app:bad/tag", err: "has no tag"},
		{image: "app:-bad", err: "invalid tag"},
		{image: ":1.0", err: "no repository"},
		{image: "app:1.0 ; rm -rf /", err: "invalid image reference"},
		{image: "", err: "invalid image reference"},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			g := NewWithT(t)
			name, tag, err := SplitImage(tt.image)
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(name).To(Equal(tt.name))
			g.Expect(tag).To(Equal(tt.tag))
			g.Expect(name + ":" + tag).To(Equal(tt.image))
		})
	}
}

func TestImageEnv(t *testing.T) {
	g := NewWithT(t)
	w := Workload{Namespace: "default", Kind: "Deployment", Name: "foo"}
	env, err := ImageEnv(w, "app", "registry.local:5000/team/app:1.2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env).To(Equal(map[string]string{
		"FLUX_WORKLOAD":  "default:deployment/foo",
		"FLUX_WL_NS":     "default",
		"FLUX_WL_KIND":   "deployment",
		"FLUX_WL_NAME":   "foo",
		"FLUX_CONTAINER": "app",
		"FLUX_IMG":       "registry.local:5000/team/app",
		"FLUX_TAG":       "1.2",
	}))

	_, err = ImageEnv(w, "app", "app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	g.Expect(err).To(HaveOccurred())
	_, err = ImageEnv(w, "", "app:1")
	g.Expect(err).To(HaveOccurred())

	cluster, err := ImageEnv(Workload{Kind: "Namespace", Name: "apps"}, "x", "a:1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cluster["FLUX_WL_NS"]).To(Equal("<cluster>"))
	g.Expect(cluster["FLUX_WORKLOAD"]).To(Equal("<cluster>:namespace/apps"))
}

func TestPolicyEnv(t *testing.T) {
	g := NewWithT(t)
	w := Workload{Namespace: "apps", Kind: "deployment", Name: "podinfo"}
	value := "semver:~1.2"
	g.Expect(PolicyEnv(w, "tag.podinfo", &value)).To(Equal(map[string]string{
		"FLUX_WORKLOAD":     "apps:deployment/podinfo",
		"FLUX_WL_NS":        "apps",
		"FLUX_WL_KIND":      "deployment",
		"FLUX_WL_NAME":      "podinfo",
		"FLUX_POLICY":       "tag.podinfo",
		"FLUX_POLICY_VALUE": "semver:~1.2",
	}))
	empty := ""
	g.Expect(PolicyEnv(w, "locked", &empty)).NotTo(HaveKey("FLUX_POLICY_VALUE"), "an empty value is a removal")
	g.Expect(PolicyEnv(w, "automated", nil)).To(Equal(map[string]string{
		"FLUX_WORKLOAD": "apps:deployment/podinfo",
		"FLUX_WL_NS":    "apps",
		"FLUX_WL_KIND":  "deployment",
		"FLUX_WL_NAME":  "podinfo",
		"FLUX_POLICY":   "automated",
	}))
}

const updatersConfig = `version: 1
commandUpdated:
  generators:
    - command: cat manifests.yaml
  updaters:
    - containerImage:
        command: echo "image1 $FLUX_WORKLOAD $FLUX_CONTAINER $FLUX_IMG:$FLUX_TAG" >> log
      policy:
        command: echo "policy1 $FLUX_POLICY=${FLUX_POLICY_VALUE-<unset>}" >> log
    - policy:
        command: echo "policy2 $FLUX_WL_NAME" >> log
    - containerImage:
        command: echo "image2 $(basename "$PWD")" >> log
`

func TestRunUpdaters(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".flux.yaml": updatersConfig, "staging/manifests.yaml": ""})
	cfg := mustParse(t, root, ".flux.yaml")
	dir, err := TargetDir(root, "staging")
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "log")
	readLog := func(g Gomega) []string {
		data, err := os.ReadFile(logFile)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.Remove(logFile)).To(Succeed())
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	w := Workload{Namespace: "default", Kind: "deployment", Name: "foo"}

	t.Run("image updaters in order", func(t *testing.T) {
		g := NewWithT(t)
		env, err := ImageEnv(w, "app", "nginx:1.15")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(RunUpdaters(context.Background(), shell{}, dir, cfg, ImageUpdate, env)).To(Succeed())
		g.Expect(readLog(g)).To(Equal([]string{"image1 default:deployment/foo app nginx:1.15", "image2 staging"}))
	})
	t.Run("policy updaters in order", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(RunUpdaters(context.Background(), shell{}, dir, cfg, PolicyUpdate, PolicyEnv(w, "automated", nil))).To(Succeed())
		g.Expect(readLog(g)).To(Equal([]string{"policy1 automated=<unset>", "policy2 foo"}))
	})
	t.Run("a failing updater is named", func(t *testing.T) {
		g := NewWithT(t)
		bad, err := Parse([]byte("version: 1\ncommandUpdated:\n  generators:\n    - command: 'true'\n  updaters:\n    - containerImage:\n        command: echo no kubeyaml >&2; exit 127\n    - containerImage:\n        command: touch second\n"), "staging/.flux.yaml")
		g.Expect(err).NotTo(HaveOccurred())
		env, _ := ImageEnv(w, "app", "nginx:1.15")
		err = RunUpdaters(context.Background(), shell{}, dir, bad, ImageUpdate, env)
		var ce *CommandError
		g.Expect(errors.As(err, &ce)).To(BeTrue())
		g.Expect(err.Error()).To(Equal(`containerImage updater "echo no kubeyaml >&2; exit 127" of staging/.flux.yaml failed (exit status 127): no kubeyaml`))
		g.Expect(filepath.Join(dir, "second")).NotTo(BeAnExistingFile())
	})
	t.Run("no updater of that kind", func(t *testing.T) {
		g := NewWithT(t)
		none, err := Parse([]byte("version: 1\ncommandUpdated:\n  generators:\n    - command: 'true'\n  updaters:\n    - containerImage:\n        command: 'true'\n"), ".flux.yaml")
		g.Expect(err).NotTo(HaveOccurred())
		err = RunUpdaters(context.Background(), shell{}, dir, none, PolicyUpdate, PolicyEnv(w, "locked", nil))
		g.Expect(err).To(MatchError(".flux.yaml has no policy updaters"))
	})
	t.Run("patchUpdated has no updaters", func(t *testing.T) {
		g := NewWithT(t)
		patch, err := Parse([]byte("version: 1\npatchUpdated:\n  generators:\n    - command: 'true'\n  patchFile: p.yaml\n"), ".flux.yaml")
		g.Expect(err).NotTo(HaveOccurred())
		err = RunUpdaters(context.Background(), shell{}, dir, patch, ImageUpdate, nil)
		g.Expect(err).To(MatchError(ContainSubstring("not a commandUpdated config")))
	})
}
