// Package notify delivers the events of gates to webhooks (docs/notifications.md): the
// payloads of each endpoint type, the HTTP delivery (timeout, retries with exponential backoff,
// HMAC signature, redirects kept to the same host, bounded answers), the addresses a tenant's URL
// may reach, and the bounded queue that keeps all of it off the gate reconciler's path.
//
// Which GateNotifications an event goes to, and their status, is the controller's part
// (internal/controller/gatenotification_*.go); this package knows neither Kubernetes objects nor
// clients.
package notify
