package fluxyaml

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		check func(g Gomega, c *Config)
	}{
		{
			name: "commandUpdated from docs/fluxyaml.md",
			data: `version: 1
commandUpdated:
  generators:
    - command: kustomize build .
  updaters:
    # use on flux-patch.yaml
    - containerImage:
        command: >-
          cat flux-patch.yaml |
          kubeyaml image --namespace $FLUX_WL_NS --kind $FLUX_WL_KIND --name $FLUX_WL_NAME --container $FLUX_CONTAINER --image "$FLUX_IMG:$FLUX_TAG"
          > new-flux-patch.yaml &&
          mv new-flux-patch.yaml flux-patch.yaml
      policy:
        command: >-
          cat flux-patch.yaml |
          kubeyaml annotate --namespace $FLUX_WL_NS --kind $FLUX_WL_KIND --name $FLUX_WL_NAME "$FLUX_POLICY=$FLUX_POLICY_VALUE"
          > new-flux-patch.yaml &&
          mv new-flux-patch.yaml flux-patch.yaml
`,
			check: func(g Gomega, c *Config) {
				g.Expect(c.Version).To(Equal(1))
				g.Expect(c.PatchUpdated).To(BeNil())
				g.Expect(c.ScanForFiles).To(BeNil())
				g.Expect(c.CommandUpdated.Generators).To(Equal([]Command{{Command: "kustomize build ."}}))
				g.Expect(c.CommandUpdated.Updaters).To(HaveLen(1))
				g.Expect(c.CommandUpdated.Updaters[0].ContainerImage.Command).To(HavePrefix("cat flux-patch.yaml | kubeyaml image"))
				g.Expect(c.CommandUpdated.Updaters[0].Policy.Command).To(ContainSubstring(`"$FLUX_POLICY=$FLUX_POLICY_VALUE"`))
			},
		},
		{
			name: "commandUpdated with two generators, timeout and an image-only updater",
			data: `version: 1
commandUpdated:
  generators:
    - command: kustomize build .
    - command: helm template ../charts/mychart -f overrides.yaml
      timeout: 2m
  updaters:
    - containerImage:
        command: ./update-image.sh
`,
			check: func(g Gomega, c *Config) {
				g.Expect(c.CommandUpdated.Generators).To(HaveLen(2))
				g.Expect(c.CommandUpdated.Generators[0].Timeout).To(BeNil())
				g.Expect(c.CommandUpdated.Generators[1].Timeout.Duration).To(Equal(2 * time.Minute))
				g.Expect(c.CommandUpdated.Updaters[0].Policy).To(BeNil())
			},
		},
		{
			name: "patchUpdated from docs/fluxyaml.md",
			data: `version: 1
patchUpdated:
  generators:
    - command: helm template ../charts/mychart -f overrides.yaml
  patchFile: flux-patch.yaml
`,
			check: func(g Gomega, c *Config) {
				g.Expect(c.CommandUpdated).To(BeNil())
				g.Expect(c.PatchUpdated.PatchFile).To(Equal("flux-patch.yaml"))
				g.Expect(c.PatchUpdated.Generators[0].Command).To(Equal("helm template ../charts/mychart -f overrides.yaml"))
			},
		},
		{
			name: "patchFile in a subdirectory",
			data: "version: 1\npatchUpdated:\n  generators:\n    - command: kustomize build .\n  patchFile: patches/flux.yaml\n",
			check: func(g Gomega, c *Config) {
				g.Expect(c.PatchUpdated.PatchFile).To(Equal("patches/flux.yaml"))
			},
		},
		{
			name:  "scanForFiles",
			data:  "version: 1\nscanForFiles: {}\n",
			check: func(g Gomega, c *Config) { g.Expect(c.ScanForFiles).NotTo(BeNil()) },
		},
		{
			name:  "scanForFiles without a value",
			data:  "version: 1\nscanForFiles:\n",
			check: func(g Gomega, c *Config) { g.Expect(c.ScanForFiles).NotTo(BeNil()) },
		},
		{
			name:  "JSON is YAML",
			data:  `{"version": 1, "scanForFiles": {}}`,
			check: func(g Gomega, c *Config) { g.Expect(c.ScanForFiles).NotTo(BeNil()) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := Parse([]byte(tt.data), "staging/.flux.yaml")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Name()).To(Equal("staging/.flux.yaml"))
			tt.check(g, c)
		})
	}
}

func TestParseInvalid(t *testing.T) {
	const gen = "  generators:\n    - command: kustomize build .\n"
	tests := []struct {
		name string
		data string
		err  string
	}{
		{"wrong version", "version: 2\nscanForFiles: {}\n", "version 2 is not supported: .flux.yaml version must be 1"},
		{"missing version", "scanForFiles: {}\n", "version is missing: .flux.yaml version must be 1"},
		{"version as a string", "version: \"1\"\nscanForFiles: {}\n", "version"},
		{"empty file", "# nothing\n", "the file is empty"},
		{"two documents", "version: 1\nscanForFiles: {}\n---\nversion: 1\n", "2 YAML documents"},
		{"not a mapping", "- version: 1\n", "must be a YAML mapping"},
		{"broken YAML", "version: [1\n", "not valid YAML"},
		{"duplicate key", "version: 1\nversion: 1\nscanForFiles: {}\n", "not valid YAML"},
		{"no variant", "version: 1\n", "one of commandUpdated, patchUpdated, scanForFiles is required"},
		{"both variants", "version: 1\ncommandUpdated:\n" + gen + "patchUpdated:\n" + gen + "  patchFile: p.yaml\n",
			"commandUpdated and patchUpdated are mutually exclusive"},
		{"scanForFiles with commandUpdated", "version: 1\nscanForFiles: {}\ncommandUpdated:\n" + gen,
			"commandUpdated and scanForFiles are mutually exclusive"},
		{"unknown top-level field", "version: 1\nfiles: {}\n", `unknown field "files"`},
		{"patchFile under commandUpdated", "version: 1\ncommandUpdated:\n" + gen + "  patchFile: p.yaml\n",
			`unknown field "commandUpdated.patchFile"`},
		{"misspelt generator field", "version: 1\ncommandUpdated:\n  generators:\n    - cmd: kustomize build .\n",
			`unknown field "commandUpdated.generators[0].cmd"`},
		{"field in the wrong case", "version: 1\nCommandUpdated:\n" + gen, `unknown field "CommandUpdated"`},
		{"field inside scanForFiles", "version: 1\nscanForFiles:\n  paths: [a]\n", `unknown field "scanForFiles.paths"`},
		{"missing patchFile", "version: 1\npatchUpdated:\n" + gen, "patchUpdated.patchFile is required"},
		{"patchFile escaping", "version: 1\npatchUpdated:\n" + gen + "  patchFile: ../flux-patch.yaml\n", `patchFile "../flux-patch.yaml" escapes the target path`},
		{"patchFile escaping after a subdir", "version: 1\npatchUpdated:\n" + gen + "  patchFile: a/../../p.yaml\n", "escapes the target path"},
		{"patchFile absolute", "version: 1\npatchUpdated:\n" + gen + "  patchFile: /etc/passwd\n", "must be relative to the target path"},
		{"patchFile a directory", "version: 1\npatchUpdated:\n" + gen + "  patchFile: .\n", "must name a file"},
		{"no generators", "version: 1\ncommandUpdated:\n  updaters: []\n", "commandUpdated.generators: at least one generator is required"},
		{"commandUpdated null", "version: 1\ncommandUpdated:\n", "commandUpdated.generators: at least one generator is required"},
		{"patchUpdated without generators", "version: 1\npatchUpdated:\n  patchFile: p.yaml\n", "patchUpdated.generators: at least one generator is required"},
		{"empty command", "version: 1\ncommandUpdated:\n  generators:\n    - command: \"  \"\n", "commandUpdated.generators[0].command is required"},
		{"non-positive timeout", "version: 1\ncommandUpdated:\n  generators:\n    - command: x\n      timeout: 0s\n", "commandUpdated.generators[0].timeout must be positive"},
		{"bad timeout", "version: 1\ncommandUpdated:\n  generators:\n    - command: x\n      timeout: soon\n", "soon"},
		{"empty updater", "version: 1\ncommandUpdated:\n" + gen + "  updaters:\n    - {}\n", "commandUpdated.updaters[0]: neither containerImage nor policy is set"},
		{"updater without command", "version: 1\ncommandUpdated:\n" + gen + "  updaters:\n    - policy: {}\n", "commandUpdated.updaters[0].policy.command is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Parse([]byte(tt.data), "apps/.flux.yaml")
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(HavePrefix("apps/.flux.yaml: "))
			g.Expect(err.Error()).To(ContainSubstring(tt.err))
			var ce *ConfigError
			g.Expect(errors.As(err, &ce)).To(BeTrue())
		})
	}
}
