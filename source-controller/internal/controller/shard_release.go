package controller

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sluice-gitops/sluice/shared/sharding"

	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

// ReleaseMovedArtifacts, with --sharding, removes from this replica's disk the artifacts of the
// objects that moved to another replica, grace after each new assignment settled (the new
// owner has published its own URL by then, and a download under way keeps its open file):
// a shard stops serving, and collects, what left it. With a shared store, every replica serves
// them from the bucket all the same.
func ReleaseMovedArtifacts(shards *sharding.Shards, store *storage.Storage, grace time.Duration) {
	log := ctrl.Log.WithName("sharding")
	shards.OnSettle(func() {
		time.AfterFunc(grace, func() {
			released, err := store.ReleaseUnowned(shards.Keeps)
			if err != nil {
				log.Error(err, "removing the artifacts of objects that moved to another replica")
			}
			if len(released) > 0 {
				log.Info("removed the artifacts of objects that moved to another replica", "objects", len(released))
			}
		})
	})
}
