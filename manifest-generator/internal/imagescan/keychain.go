package imagescan

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// Keys of the data of Kubernetes Secrets of type kubernetes.io/dockerconfigjson
// and the older kubernetes.io/dockercfg.
const (
	DockerConfigJSONKey = ".dockerconfigjson"
	DockerCfgKey        = ".dockercfg"
)

// KeychainFromSecrets is a Keychain over the data of image pull Secrets,
// given in the order of a pod's imagePullSecrets. A registry's entry may
// name a host ("ghcr.io", "https://index.docker.io/v1/") or a host and
// path prefix ("ghcr.io/team"); the longest entry matching the repository
// wins, and of equal entries the first secret's. Repositories that no
// entry matches are read anonymously.
func KeychainFromSecrets(secrets ...map[string][]byte) (authn.Keychain, error) {
	k := secretKeychain{}
	for i, data := range secrets {
		auths, err := parseDockerConfig(data)
		if err != nil {
			return nil, fmt.Errorf("image pull secret %d: %w", i+1, err)
		}
		for entry, cfg := range auths {
			key := normalizeRegistry(entry)
			if _, ok := k[key]; !ok && key != "" {
				k[key] = cfg
			}
		}
	}
	return k, nil
}

func parseDockerConfig(data map[string][]byte) (map[string]authn.AuthConfig, error) {
	if raw, ok := data[DockerConfigJSONKey]; ok {
		var cfg struct {
			Auths map[string]authn.AuthConfig `json:"auths"`
		}
		// The error of encoding/json quotes no input, so no secret leaks.
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", DockerConfigJSONKey, err)
		}
		return cfg.Auths, nil
	}
	if raw, ok := data[DockerCfgKey]; ok {
		var auths map[string]authn.AuthConfig
		if err := json.Unmarshal(raw, &auths); err != nil {
			return nil, fmt.Errorf("%s: %w", DockerCfgKey, err)
		}
		return auths, nil
	}
	return nil, fmt.Errorf("no %s or %s key", DockerConfigJSONKey, DockerCfgKey)
}

// normalizeRegistry turns a docker config entry into "host[/path]" as
// go-containerregistry names repositories (Docker Hub is index.docker.io).
func normalizeRegistry(entry string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(entry, "https://"), "http://")
	s = strings.TrimSuffix(s, "/")
	// Docker's own entries end in an API version: https://index.docker.io/v1/.
	s = strings.TrimSuffix(strings.TrimSuffix(s, "/v1"), "/v2")
	host, path, _ := strings.Cut(s, "/")
	if host == "docker.io" || host == "registry-1.docker.io" {
		host = name.DefaultRegistry
	}
	if path == "" {
		return host
	}
	return host + "/" + path
}

// secretKeychain maps "host[/path]" to credentials.
type secretKeychain map[string]authn.AuthConfig

func (k secretKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	ref := target.String()
	best, found := "", false
	for key := range k {
		if (ref == key || strings.HasPrefix(ref, key+"/")) && len(key) > len(best) {
			best, found = key, true
		}
	}
	if !found {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(k[best]), nil
}
