package build

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
)

// An invalid .flux.yaml needs a new commit: terminal, naming the file.
func TestBuildInvalidConfigIsTerminal(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{
		"apps/.flux.yaml":   "version: 2\ncommandUpdated:\n  generators:\n    - command: cat service.yaml\n",
		"apps/service.yaml": serviceYAML,
	}))
	b := newBuilder(t, Options{})

	_, err := b.Build(context.Background(), testOwner, art, specOf("apps"))
	var ce *fluxyaml.ConfigError
	g.Expect(errors.As(err, &ce)).To(BeTrue(), "%v", err)
	g.Expect(IsTerminal(err)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("apps/.flux.yaml: version 2 is not supported"))
}

// A failing generator is a *fluxyaml.CommandError with its stderr, retried, and not cached.
func TestBuildFailingGenerator(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{
		".flux.yaml": `version: 1
commandUpdated:
  generators:
    - command: |
        mktemp "$COUNTER_DIR/run.XXXXXX" >/dev/null; echo "chart not found: mychart" >&2; exit 3
`,
	}))
	counter := proctest.SharedDir(t)
	b := newBuilder(t, Options{})

	for i := 1; i <= 2; i++ {
		_, err := b.Build(context.Background(), testOwner, art, specOf("./", "COUNTER_DIR", counter))
		var ce *fluxyaml.CommandError
		g.Expect(errors.As(err, &ce)).To(BeTrue(), "%v", err)
		g.Expect(ce.ExitCode).To(Equal(3))
		g.Expect(ce.Stderr).To(ContainSubstring("chart not found: mychart"))
		g.Expect(ce.ConfigFile).To(Equal(".flux.yaml"))
		g.Expect(IsTerminal(err)).To(BeFalse())
		g.Expect(runs(t, counter)).To(Equal(i), "a failure is not cached")
	}
}

// A generator that prints something other than Kubernetes objects needs a new commit.
func TestBuildGarbageOutputIsTerminal(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{
		".flux.yaml": "version: 1\ncommandUpdated:\n  generators:\n    - command: |\n        echo 'hello: [world'\n",
	}))
	b := newBuilder(t, Options{})

	_, err := b.Build(context.Background(), testOwner, art, specOf("./"))
	var me *fluxyaml.ManifestError
	g.Expect(errors.As(err, &me)).To(BeTrue(), "%v", err)
	g.Expect(IsTerminal(err)).To(BeTrue())
}

// The generators see spec.env and PATH, never the controller's environment; the timeout of
// spec.timeout applies to each command.
func TestBuildCommandEnvironment(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("CONTROLLER_SECRET", "s3cr3t")
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{
		".flux.yaml": `version: 1
commandUpdated:
  generators:
    - command: |
        printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: env\ndata:\n  region: "%s"\n  secret: "%s"\n  path: "%s"\n' "$REGION" "$CONTROLLER_SECRET" "$PATH"
`,
	}))
	b := newBuilder(t, Options{Path: "/usr/bin:/bin"})

	res, err := b.Build(context.Background(), testOwner, art, specOf("./", "REGION", "eu-west-1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(HaveLen(1))
	g.Expect(res.Objects[0].Object["data"]).To(Equal(map[string]any{"region": "eu-west-1", "secret": "", "path": "/usr/bin:/bin"}))
}

// spec.timeout bounds each command; without it, the controller's --sync-timeout does.
func TestBuildCommandTimeout(t *testing.T) {
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{
		".flux.yaml": "version: 1\ncommandUpdated:\n  generators:\n    - command: sleep 10\n",
	}))
	for name, tc := range map[string]struct {
		defaultTimeout time.Duration
		specTimeout    *metav1.Duration
	}{
		"spec.timeout":   {defaultTimeout: time.Minute, specTimeout: &metav1.Duration{Duration: 200 * time.Millisecond}},
		"--sync-timeout": {defaultTimeout: 200 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			b := newBuilder(t, Options{DefaultTimeout: tc.defaultTimeout})
			spec := specOf("./")
			spec.Timeout = tc.specTimeout
			_, err := b.Build(context.Background(), testOwner, art, spec)
			var ce *fluxyaml.CommandError
			g.Expect(errors.As(err, &ce)).To(BeTrue(), "%v", err)
			g.Expect(ce.TimedOut).To(BeTrue())
			g.Expect(err.Error()).To(ContainSubstring(`generator "sleep 10" of .flux.yaml timed out after 200ms`))
			g.Expect(IsTerminal(err)).To(BeFalse())
		})
	}
}

// Output over --max-output-size fails the revision for good: the same revision prints the same.
func TestBuildOutputCapIsTerminal(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{
		".flux.yaml": "version: 1\ncommandUpdated:\n  generators:\n    - command: head -c 2048 /dev/zero\n",
	}))
	_, err := newBuilder(t, Options{MaxOutput: 1024}).Build(context.Background(), testOwner, art, specOf("./"))
	g.Expect(err).To(MatchError(ContainSubstring("output larger than 1024 bytes")))
	g.Expect(IsTerminal(err)).To(BeTrue())
}

// An empty output would prune everything: refused unless spec.allowEmpty or prune is off.
func TestBuildEmptyOutput(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{
		"generated/.flux.yaml": "version: 1\ncommandUpdated:\n  generators:\n    - command: echo '# nothing today'\n",
		"raw/README.md":        "no manifests here\n",
	}))
	b := newBuilder(t, Options{})

	for _, path := range []string{"generated", "raw"} {
		spec := specOf(path)
		_, err := b.Build(context.Background(), testOwner, art, spec)
		g.Expect(err).To(MatchError(ErrEmpty), path)
		g.Expect(err.Error()).To(Equal("the target path produced no objects: set spec.allowEmpty to apply an empty set (it prunes everything)"))
		g.Expect(IsTerminal(err)).To(BeTrue())

		spec.AllowEmpty = true
		res, err := b.Build(context.Background(), testOwner, art, spec)
		g.Expect(err).NotTo(HaveOccurred(), path)
		g.Expect(res.Objects).To(BeEmpty())

		spec.AllowEmpty = false
		prune := false
		spec.Prune = &prune
		res, err = b.Build(context.Background(), testOwner, art, spec)
		g.Expect(err).NotTo(HaveOccurred(), path)
		g.Expect(res.Objects).To(BeEmpty())
		g.Expect(res.FromCache).To(BeTrue(), "the empty result is cached; the check is made on every Build")
	}
}

// Target paths that are not directories inside the artifact need a new commit or spec.
func TestBuildTargetPathErrors(t *testing.T) {
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{"apps/service.yaml": serviceYAML}))
	b := newBuilder(t, Options{})

	for path, msg := range map[string]string{
		"../etc":            "outside the artifact",
		"apps/../../etc":    "outside the artifact",
		"missing":           `path "missing" not found in the artifact`,
		"apps/service.yaml": "is not a directory",
	} {
		t.Run(path, func(t *testing.T) {
			g := NewWithT(t)
			_, err := b.Build(context.Background(), testOwner, art, specOf(path))
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(msg))
			g.Expect(IsTerminal(err)).To(BeTrue())
		})
	}
}

// FLUX_* carry the updaters' request and are not for spec.env.
func TestBuildReservedEnvIsTerminal(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{"apps/service.yaml": serviceYAML}))
	b := newBuilder(t, Options{})

	_, err := b.Build(context.Background(), testOwner, art, specOf("apps", "FLUX_IMG", "x"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.env: FLUX_IMG is reserved"))
	g.Expect(IsTerminal(err)).To(BeTrue())
}

func TestIsTerminal(t *testing.T) {
	g := NewWithT(t)
	g.Expect(IsTerminal(nil)).To(BeFalse())
	g.Expect(IsTerminal(errors.New("connection refused"))).To(BeFalse())
	g.Expect(IsTerminal(&fluxyaml.CommandError{Command: "false", Err: errors.New("exit status 1")})).To(BeFalse())
	g.Expect(IsTerminal(&fluxyaml.ConfigError{File: ".flux.yaml", Reason: "bad"})).To(BeTrue())
	g.Expect(IsTerminal(&fluxyaml.ManifestError{Msg: "bad"})).To(BeTrue())
	g.Expect(IsTerminal(ErrEmpty)).To(BeTrue())
}
