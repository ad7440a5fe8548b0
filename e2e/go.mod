module github.com/sluice-gitops/sluice/e2e

go 1.26.0

replace github.com/sluice-gitops/sluice/shared => ../shared

require (
	github.com/sluice-gitops/sluice/shared v0.0.0-00010101000000-000000000000
	github.com/spf13/pflag v1.0.10
	k8s.io/api v0.36.4
	k8s.io/apimachinery v0.36.4
	k8s.io/client-go v0.36.4
	sigs.k8s.io/controller-runtime v0.24.1
)
