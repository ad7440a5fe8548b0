// Command manifest-generator is the Sluice manifest-generator.
package main

import (
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/sluice-gitops/sluice/shared/bootstrap"
)

const controllerName = "manifest-generator"

func main() {
	var opts bootstrap.Options
	opts.BindFlags(pflag.CommandLine, true)
	pflag.Parse()

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))

	mgr, err := opts.NewManager(controllerName, scheme)
	bootstrap.Exit(err, "creating manager")
	bootstrap.Run(mgr, controllerName)
}
