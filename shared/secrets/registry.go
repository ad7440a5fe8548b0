package secrets

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

// ErrNoDockerConfig: the Secret holds neither `.dockerconfigjson` nor `.dockercfg`.
var ErrNoDockerConfig = fmt.Errorf("holds neither '%s' nor '%s'", corev1.DockerConfigJsonKey, corev1.DockerConfigKey)

// Registries are the registry credentials of docker-config Secrets (kubernetes.io/dockerconfigjson
// or the older kubernetes.io/dockercfg), as a go-containerregistry keychain. An entry of `auths`
// may be written as a host ("ghcr.io", "127.0.0.1:5000"), a URL ("https://ghcr.io",
// "https://ghcr.io/v2/"), or either with a path ("ghcr.io/team"); Docker Hub's names
// (docker.io, index.docker.io, registry-1.docker.io, "https://index.docker.io/v1/") are one
// registry. A repository takes the entry of the longest host and path that contains it (a path
// prefix ends at a "/"); of equal entries, the first Secret added wins. A repository that no entry
// matches is read anonymously. The zero value holds no credentials.
//
// go-containerregistry's own Kubernetes keychain (pkg/authn/kubernetes, the kubelet's matching)
// is not used: it does not map Docker Hub's names to one another and matches a path as a string
// prefix ("ghcr.io/team" would serve "ghcr.io/team2").
type Registries struct {
	entries []registryEntry
}

type registryEntry struct {
	key  string // "host[/path]", normalized
	auth authn.AuthConfig
}

// Add adds the entries of a docker-config Secret's data, after those already added. Its errors
// name the key that fails and never quote the Secret's content.
func (r *Registries) Add(data map[string][]byte) error {
	var auths map[string]authn.AuthConfig
	if raw, ok := data[corev1.DockerConfigJsonKey]; ok {
		var cfg struct {
			Auths map[string]authn.AuthConfig `json:"auths"`
		}
		// The decoder's error is not quoted: a syntax error shows the input around it.
		if json.Unmarshal(raw, &cfg) != nil {
			return fmt.Errorf("'%s' is not a Docker config JSON", corev1.DockerConfigJsonKey)
		}
		auths = cfg.Auths
	} else if raw, ok := data[corev1.DockerConfigKey]; ok {
		if json.Unmarshal(raw, &auths) != nil {
			return fmt.Errorf("'%s' is not a Docker config JSON", corev1.DockerConfigKey)
		}
	} else {
		return ErrNoDockerConfig
	}
	// Sorted, so that two entries of one Secret that name the same registry resolve the same
	// way every time (a map has no order).
	keys := make([]string, 0, len(auths))
	for k := range auths {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if key := normalizeRegistry(k); key != "" {
			r.entries = append(r.entries, registryEntry{key: key, auth: auths[k]})
		}
	}
	return nil
}

// Lookup returns the credentials of the entry that matches target, a repository
// ("ghcr.io/team/app") or a registry ("ghcr.io"), written as go-containerregistry names it or as
// a user writes it in a URL ("oci://ghcr.io/team/app").
func (r *Registries) Lookup(target string) (authn.AuthConfig, bool) {
	if r == nil {
		return authn.AuthConfig{}, false
	}
	target = normalizeRegistry(target)
	best := -1
	for i, e := range r.entries {
		if target != e.key && !strings.HasPrefix(target, e.key+"/") {
			continue
		}
		if best < 0 || len(e.key) > len(r.entries[best].key) {
			best = i
		}
	}
	if best < 0 {
		return authn.AuthConfig{}, false
	}
	return r.entries[best].auth, true
}

// Resolve implements authn.Keychain.
func (r *Registries) Resolve(target authn.Resource) (authn.Authenticator, error) {
	if cfg, ok := r.Lookup(target.String()); ok {
		return authn.FromConfig(cfg), nil
	}
	return authn.Anonymous, nil
}

// ErrNoRegistryCredentials: a Secret named for a registry has no entry for it.
var ErrNoRegistryCredentials = errors.New("no credentials")

// RegistryAuth is the credentials of a docker-config Secret's data for target (see
// Registries.Lookup): for a source whose spec.secretRef names one Secret, where a Secret without
// an entry for the source is a mistake to report rather than an anonymous pull.
func RegistryAuth(data map[string][]byte, target string) (authn.Authenticator, error) {
	var r Registries
	if err := r.Add(data); err != nil {
		return nil, err
	}
	cfg, ok := r.Lookup(target)
	if !ok {
		return nil, fmt.Errorf("%w for '%s'", ErrNoRegistryCredentials, target)
	}
	return authn.FromConfig(cfg), nil
}

// normalizeRegistry writes a docker config key or a repository as "host[/path]" the way
// go-containerregistry names repositories: no scheme, no trailing "/", no Docker API version
// ("/v1/", "/v2/") as the whole path, a lower-case host, and Docker Hub as index.docker.io.
func normalizeRegistry(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
	s = strings.TrimPrefix(s, "oci://")
	s = strings.TrimRight(s, "/")
	host, path, _ := strings.Cut(s, "/")
	if path == "v1" || path == "v2" {
		path = ""
	}
	host = strings.ToLower(host)
	switch host {
	case "docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		host = name.DefaultRegistry
	}
	if host == "" {
		return ""
	}
	if path == "" {
		return host
	}
	return host + "/" + path
}
