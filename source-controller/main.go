// Command source-controller is the Sluice source-controller.
package main

import (
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/sluice-gitops/sluice/shared/bootstrap"
)

const controllerName = "source-controller"

func main() {
	var opts bootstrap.Options
	opts.BindFlags(pflag.CommandLine, false)
	pflag.Parse()

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))

	mgr, err := opts.NewManager(controllerName, scheme)
	bootstrap.Exit(err, "creating manager")
	bootstrap.Run(mgr, controllerName)
}
