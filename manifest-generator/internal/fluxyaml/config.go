// Package fluxyaml reads Flux v1 style .flux.yaml files and carries them
// out: it finds the file that governs a target path, runs its generators
// and updaters as shell commands in a locked-down environment, and turns
// generator output (or raw YAML files) into Kubernetes objects.
package fluxyaml

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// FileName is the name of the configuration file looked up for a target path.
const FileName = ".flux.yaml"

// Version is the only .flux.yaml format version; Flux v1 enforced it too.
const Version = 1

// Config is a parsed .flux.yaml. Exactly one of CommandUpdated,
// PatchUpdated and ScanForFiles is set.
type Config struct {
	Version        int             `json:"version"`
	CommandUpdated *CommandUpdated `json:"commandUpdated,omitempty"`
	PatchUpdated   *PatchUpdated   `json:"patchUpdated,omitempty"`
	ScanForFiles   *ScanForFiles   `json:"scanForFiles,omitempty"`

	// name is the file the config was parsed from, for error messages.
	name string
}

// CommandUpdated generates manifests with commands and changes them with
// updater commands that edit the working tree.
type CommandUpdated struct {
	Generators []Command `json:"generators"`
	Updaters   []Updater `json:"updaters,omitempty"`
}

// Updater holds the command run for an image change and the one run for a
// policy change; either may be missing.
type Updater struct {
	ContainerImage *Command `json:"containerImage,omitempty"`
	Policy         *Command `json:"policy,omitempty"`
}

// PatchUpdated generates manifests with commands and records changes in a
// merge patch file applied on top of the generated output.
type PatchUpdated struct {
	Generators []Command `json:"generators"`
	PatchFile  string    `json:"patchFile"`
}

// ScanForFiles treats the target path as plain YAML files, which resets a
// .flux.yaml found higher up in the tree.
type ScanForFiles struct{}

// Command is one shell command line, run with /bin/sh -c.
type Command struct {
	Command string           `json:"command"`
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// Name returns the file name Parse was given (FileName when none).
func (c *Config) Name() string {
	if c == nil || c.name == "" {
		return FileName
	}
	return c.name
}

// variants lists the top-level keys that select how manifests are made.
var variants = []string{"commandUpdated", "patchUpdated", "scanForFiles"}

// Parse reads a .flux.yaml. name is the file's path (relative to the
// artifact root) and is only used in error messages. Parsing is strict:
// unknown or duplicate fields are errors, because a misspelt key (say a
// patchFile under commandUpdated) would otherwise silently change behaviour.
func Parse(data []byte, name string) (*Config, error) {
	if name == "" {
		name = FileName
	}
	fail := func(format string, args ...any) error {
		return &ConfigError{File: name, Reason: fmt.Sprintf(format, args...)}
	}

	// sigs.k8s.io/yaml reads only the first document; a second one would be
	// ignored without this check.
	n, err := countDocuments(data)
	if err != nil {
		return nil, fail("not valid YAML: %v", err)
	}
	switch {
	case n == 0:
		return nil, fail("the file is empty: .flux.yaml needs version: 1 and one of %s", strings.Join(variants, ", "))
	case n > 1:
		return nil, fail("the file holds %d YAML documents, expected one", n)
	}

	cfg, top, err := decodeStrict(data, name)
	if err != nil {
		return nil, fail("%s", err)
	}

	if _, ok := top["version"]; !ok {
		return nil, fail("version is missing: .flux.yaml version must be %d", Version)
	}
	if cfg.Version != Version {
		return nil, fail("version %d is not supported: .flux.yaml version must be %d", cfg.Version, Version)
	}

	// Count keys, not pointers: "scanForFiles:" with no value is null in
	// YAML but still a choice of variant.
	var present []string
	for _, v := range variants {
		if _, ok := top[v]; ok {
			present = append(present, v)
		}
	}
	switch len(present) {
	case 0:
		return nil, fail("one of %s is required", strings.Join(variants, ", "))
	case 1:
	default:
		return nil, fail("%s are mutually exclusive: set exactly one", strings.Join(present, " and "))
	}

	if err := cfg.validate(present[0]); err != nil {
		return nil, fail("%v", err)
	}
	return cfg, nil
}

// decodeStrict decodes the one YAML document of data into a Config, and into its top-level
// keys (top), refusing duplicate keys, keys in another case and unknown fields.
func decodeStrict(data []byte, name string) (cfg *Config, top map[string]any, err error) {
	// YAMLToJSONStrict rejects duplicate keys; sigs.k8s.io/json then decodes
	// case-sensitively and reports unknown fields with their full path
	// (encoding/json would accept "Version" for "version").
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, nil, fmt.Errorf("not valid YAML: %s", oneLine(err))
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &top); err != nil || top == nil {
		return nil, nil, errors.New("the file must be a YAML mapping")
	}
	cfg = &Config{name: name}
	strictErrs, err := kjson.UnmarshalStrict(js, cfg)
	if err != nil {
		return nil, nil, err
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, 0, len(strictErrs))
		for _, e := range strictErrs {
			msgs = append(msgs, e.Error())
		}
		return nil, nil, errors.New(strings.Join(msgs, "; "))
	}
	return cfg, top, nil
}

// validate checks the settings of the config's variant, and defaults an empty one.
func (c *Config) validate(variant string) error {
	switch variant {
	case "commandUpdated":
		if c.CommandUpdated == nil {
			c.CommandUpdated = &CommandUpdated{}
		}
		if err := validateGenerators("commandUpdated", c.CommandUpdated.Generators); err != nil {
			return err
		}
		for i, u := range c.CommandUpdated.Updaters {
			field := fmt.Sprintf("commandUpdated.updaters[%d]", i)
			if u.ContainerImage == nil && u.Policy == nil {
				return fmt.Errorf("%s: neither containerImage nor policy is set", field)
			}
			if u.ContainerImage != nil {
				if err := validateCommand(field+".containerImage", *u.ContainerImage); err != nil {
					return err
				}
			}
			if u.Policy != nil {
				if err := validateCommand(field+".policy", *u.Policy); err != nil {
					return err
				}
			}
		}
	case "patchUpdated":
		if c.PatchUpdated == nil {
			c.PatchUpdated = &PatchUpdated{}
		}
		if err := validateGenerators("patchUpdated", c.PatchUpdated.Generators); err != nil {
			return err
		}
		if err := validatePatchFile(c.PatchUpdated.PatchFile); err != nil {
			return err
		}
	case "scanForFiles":
		if c.ScanForFiles == nil {
			c.ScanForFiles = &ScanForFiles{}
		}
	}
	return nil
}

func validateGenerators(variant string, gens []Command) error {
	if len(gens) == 0 {
		return fmt.Errorf("%s.generators: at least one generator is required", variant)
	}
	for i, g := range gens {
		if err := validateCommand(fmt.Sprintf("%s.generators[%d]", variant, i), g); err != nil {
			return err
		}
	}
	return nil
}

func validateCommand(field string, c Command) error {
	if strings.TrimSpace(c.Command) == "" {
		return fmt.Errorf("%s.command is required", field)
	}
	if c.Timeout != nil && c.Timeout.Duration <= 0 {
		return fmt.Errorf("%s.timeout must be positive, got %s", field, c.Timeout.Duration)
	}
	return nil
}

// validatePatchFile keeps the patch file inside the target path: the
// manifest-generator writes to it, so it must not point anywhere else.
func validatePatchFile(p string) error {
	switch {
	case p == "":
		return errors.New("patchUpdated.patchFile is required")
	case filepath.IsAbs(p):
		return fmt.Errorf("patchUpdated.patchFile %q must be relative to the target path", p)
	case !filepath.IsLocal(p):
		return fmt.Errorf("patchUpdated.patchFile %q escapes the target path", p)
	case filepath.Clean(p) == "." || strings.HasSuffix(p, "/"):
		return fmt.Errorf("patchUpdated.patchFile %q must name a file", p)
	}
	return nil
}

// countDocuments counts the non-empty YAML documents in data, using the
// same document splitter as the manifest decoder.
func countDocuments(data []byte) (int, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	n := 0
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return 0, err
		}
		if s := strings.TrimSpace(string(js)); s != "null" && s != "" {
			n++
		}
	}
}
