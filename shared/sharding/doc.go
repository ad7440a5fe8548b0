// Package sharding spreads the objects of one controller over its running replicas, with
// Kubernetes Leases for membership and no labels placed by hand.
//
//   - Membership: each replica holds a Lease of its own (`<controller>-shard-<identity>`,
//     labelled sharding.sluice.dev/controller), renewed every RenewPeriod. A replica whose Lease
//     was not renewed within its duration is gone.
//   - Assignment: an object's key (namespace/name) hashes to one of Slots slots, and the slots
//     are assigned to the members by rendezvous hashing with bounded loads (no member holds more
//     than Load times its share, rounded up). The assignment depends on the member set alone, so
//     every replica that sees the same members computes the same owners; a member joining or
//     leaving moves about 1/N of the slots.
//   - Handover: when the members change, every replica stops starting reconciles, waits for
//     its reconciles of objects it no longer owns, and then acknowledges the new member set in
//     its Lease (sharding.sluice.dev/ring). A replica reconciles an object only once every live
//     member acknowledged the set it computed with: an object that moved is released by its
//     old owner before the new one takes it, and is never reconciled by two replicas at once.
//   - Fencing: a replica that could not renew its Lease for half its duration reconciles
//     nothing, since the others may already count it gone.
package sharding
