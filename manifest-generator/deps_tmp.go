//go:build tools

package main

import (
	_ "github.com/Masterminds/semver/v3"
	_ "github.com/ProtonMail/go-crypto/openpgp"
	_ "github.com/evanphx/json-patch/v5"
	_ "github.com/fluxcd/pkg/apis/meta"
	_ "github.com/fluxcd/pkg/runtime/conditions"
	_ "github.com/fluxcd/pkg/ssa"
	_ "github.com/go-git/go-git/v5"
	_ "github.com/onsi/gomega"
	_ "golang.org/x/crypto/ssh"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/util/strategicpatch"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/kustomize/kyaml/yaml"
	_ "sigs.k8s.io/yaml"
)
