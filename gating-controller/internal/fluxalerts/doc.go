// Package fluxalerts serves Flux's Alerts and Providers (notification.toolkit.fluxcd.io/v1beta3,
// docs/alerts.md and docs/providers.md): the event receiver that controllers post their events
// to (--events-addr, in Flux's event format), the matching of each event with the Alerts that
// select its object, and its delivery to their Providers (webhooks, chats, the commit statuses
// of forges) through the notification queue of GateNotifications (package notify): the same
// retries, address policy and secret hygiene.
package fluxalerts
