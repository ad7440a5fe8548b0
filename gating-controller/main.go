// Command gating-controller is the Sluice gating-controller.
package main

import (
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/shared/bootstrap"
)

const controllerName = "gating-controller"

func main() {
	var opts bootstrap.Options
	opts.BindFlags(pflag.CommandLine, false)
	pflag.Parse()

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gatingv1alpha1.AddToScheme(scheme))

	mgr, err := opts.NewManager(controllerName, scheme)
	bootstrap.Exit(err, "creating manager")
	bootstrap.Run(mgr, controllerName)
}
