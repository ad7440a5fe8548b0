// Package impersonation gives a controller a Kubernetes client per ServiceAccount: the identity
// the objects of a ResourceSet or a ManifestGeneration are applied, read and deleted with
// (spec.serviceAccountName, --default-service-account).
package impersonation

import (
	"fmt"
	"sync"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Clients builds and caches one client (and kstatus poller) per account. Unlike fluxcd/pkg's
// Impersonator, which builds a client and a RESTMapper for every reconcile, the clients share the
// controller's RESTMapper and live as long as the controller: a reconcile of a ResourceSet costs
// no discovery and no new connections.
type Clients struct {
	// Config is the controller's own REST config; impersonated configs are copies of it.
	Config *rest.Config
	Scheme *runtime.Scheme
	Mapper apimeta.RESTMapper
	// DefaultServiceAccount is --default-service-account: the account of ResourceSets that name
	// none, except in ControllerNamespace, where they run with the controller's permissions.
	DefaultServiceAccount string
	ControllerNamespace   string

	mu    sync.Mutex
	cache map[string]Client
}

// Client is a client and a kstatus poller that act as one account.
type Client struct {
	client.Client
	Poller *polling.StatusPoller
	// Account is "system:serviceaccount:<ns>:<name>", or "" for the controller's own identity.
	Account string
}

// ServiceAccount is the account a ResourceSet in namespace with spec.serviceAccountName sa acts
// as: sa, else --default-service-account outside the controller's namespace, else "" (the
// controller's own identity).
func (c *Clients) ServiceAccount(namespace, sa string) string {
	if sa == "" && namespace != c.ControllerNamespace {
		return c.DefaultServiceAccount
	}
	return sa
}

// Account is the user name of ServiceAccount(namespace, sa), "" for the controller itself.
func (c *Clients) Account(namespace, sa string) string {
	if sa = c.ServiceAccount(namespace, sa); sa == "" {
		return ""
	}
	return fmt.Sprintf("system:serviceaccount:%s:%s", namespace, sa)
}

// For returns the client of the account of a ResourceSet in namespace naming sa.
func (c *Clients) For(namespace, sa string) (Client, error) {
	account := c.Account(namespace, sa)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.cache[account]; ok {
		return cl, nil
	}
	cfg := rest.CopyConfig(c.Config)
	if account != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: account}
	}
	cl, err := client.New(cfg, client.Options{Scheme: c.Scheme, Mapper: c.Mapper})
	if err != nil {
		return Client{}, fmt.Errorf("client for '%s': %w", account, err)
	}
	entry := Client{Client: cl, Poller: polling.NewStatusPoller(cl, c.Mapper, polling.Options{}), Account: account}
	if c.cache == nil {
		c.cache = map[string]Client{}
	}
	c.cache[account] = entry
	return entry, nil
}
