package fluxyaml

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzParse parses fuzzed .flux.yaml files. A refusal is a *ConfigError naming the file; an
// accepted config has version 1, exactly one variant, generators with commands, positive
// timeouts and a patch file inside the target path, and it survives being written back as
// YAML and parsed again.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"version: 1\ncommandUpdated:\n  generators:\n    - command: kustomize build .\n  updaters:\n    - containerImage:\n        command: >-\n          kubeyaml image --namespace $FLUX_WL_NS\n      policy:\n        command: ./policy.sh\n",
		"version: 1\ncommandUpdated:\n  generators:\n    - command: kustomize build .\n    - command: helm template ../charts/mychart -f overrides.yaml\n      timeout: 2m\n",
		"version: 1\npatchUpdated:\n  generators:\n    - command: helm template ../charts/mychart -f overrides.yaml\n  patchFile: flux-patch.yaml\n",
		"version: 1\npatchUpdated:\n  generators:\n    - command: kustomize build .\n  patchFile: patches/flux.yaml\n",
		"version: 1\nscanForFiles: {}\n",
		"version: 1\nscanForFiles:\n",
		`{"version": 1, "scanForFiles": {}}`,
		"version: 2\nscanForFiles: {}\n",
		"scanForFiles: {}\n",
		"version: 1\n",
		"",
		"---\n---\n",
		"version: 1\nscanForFiles: {}\n---\nversion: 1\n",
		"version: 1\nversion: 1\nscanForFiles: {}\n",
		"Version: 1\nscanForFiles: {}\n",
		"version: 1\nscanForFiles: {}\ncommandUpdated:\n  generators: [{command: x}]\n",
		"version: 1\ncommandUpdated:\n  generators: []\n",
		"version: 1\ncommandUpdated:\n  generators:\n    - command: '  '\n",
		"version: 1\ncommandUpdated:\n  generators:\n    - command: x\n      timeout: -1s\n",
		"version: 1\ncommandUpdated:\n  generators:\n    - command: x\n  updaters:\n    - {}\n",
		"version: 1\ncommandUpdated:\n  generators:\n    - command: x\n  patchFile: p.yaml\n",
		"version: 1\npatchUpdated:\n  generators:\n    - command: x\n  patchFile: ../outside.yaml\n",
		"version: 1\npatchUpdated:\n  generators:\n    - command: x\n  patchFile: /etc/passwd\n",
		"version: 1\npatchUpdated:\n  generators:\n    - command: x\n  patchFile: dir/\n",
		"- version: 1\n",
		"version: 1.0\nscanForFiles: {}\n",
		"version: 1e0\nscanForFiles: {}\n",
		"version: \"1\"\nscanForFiles: {}\n",
		"version: 1\nscanForFiles: {unknown: 1}\n",
		"version: &v 1\nscanForFiles: *v\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		cfg, err := Parse(data, "apps/.flux.yaml")
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.File != "apps/.flux.yaml" {
				t.Fatalf("not a ConfigError naming the file: %#v", err)
			}
			return
		}
		checkConfig(t, cfg)
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("writing the config back: %v", err)
		}
		again, err := Parse(out, "apps/.flux.yaml")
		if err != nil {
			t.Fatalf("the config written back does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(again, cfg) {
			t.Fatalf("the config written back parses differently:\n%s", out)
		}
	})
}

// checkConfig checks what Parse promises of an accepted config.
func checkConfig(t *testing.T, cfg *Config) {
	t.Helper()
	if cfg.Version != Version {
		t.Fatalf("version %d accepted", cfg.Version)
	}
	var gens []Command
	variants := 0
	if cfg.CommandUpdated != nil {
		variants++
		gens = cfg.CommandUpdated.Generators
		for _, u := range cfg.CommandUpdated.Updaters {
			if u.ContainerImage == nil && u.Policy == nil {
				t.Fatal("an updater without commands accepted")
			}
			for _, c := range []*Command{u.ContainerImage, u.Policy} {
				if c != nil {
					checkCommand(t, *c)
				}
			}
		}
	}
	if cfg.PatchUpdated != nil {
		variants++
		gens = cfg.PatchUpdated.Generators
		p := cfg.PatchUpdated.PatchFile
		if !filepath.IsLocal(p) || filepath.Clean(p) == "." || strings.HasSuffix(p, "/") {
			t.Fatalf("patch file %q accepted", p)
		}
	}
	if cfg.ScanForFiles != nil {
		variants++
	} else if len(gens) == 0 {
		t.Fatal("a config without generators accepted")
	}
	if variants != 1 {
		t.Fatalf("%d variants accepted", variants)
	}
	for _, g := range gens {
		checkCommand(t, g)
	}
}

func checkCommand(t *testing.T, c Command) {
	t.Helper()
	if strings.TrimSpace(c.Command) == "" || c.Timeout != nil && c.Timeout.Duration <= 0 {
		t.Fatalf("command %+v accepted", c)
	}
}
