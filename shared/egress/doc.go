// Package egress decides which addresses a controller may connect to on behalf of a tenant. A
// tenant writes URLs (an input provider's service, a forge, a notification's webhook) that the
// controller would otherwise reach from inside the cluster: its own ports on loopback, the cloud's
// metadata service on a link-local address, the cluster's Services. A Policy refuses those unless
// the controller's flags allow them, checked on each address actually dialed (after DNS, on every
// redirect).
package egress
