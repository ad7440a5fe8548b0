package sharding

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"strings"
)

// DefaultSlots is the number of slots the keys hash to: enough for an even spread over tens of
// replicas, few enough to assign in microseconds.
const DefaultSlots = 1024

// DefaultLoad bounds a member's slots at 1.25 times its share.
const DefaultLoad = 1.25

// SlotOf is the slot of key (namespace/name) among slots.
func SlotOf(key string, slots int) int {
	sum := sha256.Sum256([]byte(key))
	return int(binary.BigEndian.Uint64(sum[:8]) % uint64(slots))
}

// Assign gives each of slots slots a member: the member of highest rendezvous weight for the
// slot that has room left, a member's room being ceil(load*slots/len(members)). Slots are
// placed in a fixed order, so the result depends on members (in any order), slots and load
// only. It is nil without members.
func Assign(members []string, slots int, load float64) []string {
	if len(members) == 0 {
		return nil
	}
	members = slices.Sorted(slices.Values(members))
	capacity := int(math.Ceil(load * float64(slots) / float64(len(members))))
	held := make(map[string]int, len(members))
	owners := make([]string, slots)
	ranked := make([]string, len(members))
	for s := range slots {
		copy(ranked, members)
		slices.SortFunc(ranked, func(a, b string) int {
			wa, wb := weight(s, a), weight(s, b)
			switch {
			case wa > wb:
				return -1
			case wa < wb:
				return 1
			}
			return strings.Compare(a, b)
		})
		for _, m := range ranked {
			if held[m] < capacity {
				owners[s] = m
				held[m]++
				break
			}
		}
	}
	return owners
}

// weight is the rendezvous weight of member for slot.
func weight(slot int, member string) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(slot))
	h := sha256.New()
	h.Write(b[:])
	h.Write([]byte(member))
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}

// RingID names a member set: what a replica acknowledges in its Lease.
func RingID(members []string) string {
	sorted := slices.Sorted(slices.Values(members))
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	return hex.EncodeToString(sum[:8])
}
