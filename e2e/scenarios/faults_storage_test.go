package scenarios

import (
	"context"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// storageShard is the label value of the objects served by the source-controller of the
// storage scenario; the package's source-controller ignores every object with the label
// (main_test.go), as in Flux's sharding.
const (
	shardLabel   = "sharding.fluxcd.io/key"
	storageShard = "storage-full"
)

const faultStorageObjects = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app
  labels:
    sharding.fluxcd.io/key: storage-full
spec:
  interval: 1s
  url: __URL__
  secretRef:
    name: git-credentials
`

// mountTmpfs mounts a tmpfs of size ("256k") on a new directory and unmounts it at the end of the
// test; it skips the test, saying why, where mounting is not permitted (CI runs as root).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "storage")
	NewWithT(t).Expect(os.Mkdir(dir, 0o755)).To(Succeed())
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a full storage volume is a small tmpfs, which this user may not mount (root or CAP_SYS_ADMIN is needed): mount: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// storageFiles lists the files and links of the storage, relative to it.
func storageFiles(g Gomega, root string) []string {
	var files []string
	g.Expect(filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(rel))
		return err
	})).To(Succeed())
	return files
}

// randomBytes is n bytes that no compressor shrinks, as the content of a file of a commit.
func randomBytes(n int) string {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(b)
	return string(b)
}

// The artifact storage is full: the source-controller's --storage-path is a 256 KiB tmpfs and a
// commit brings an artifact that does not fit. The GitRepository reports Ready=False saying that
// the storage is full (ENOSPC), keeps serving its last artifact, and leaves no partial file in
// the storage; once the volume is larger, the next reconcile stores the new artifact. The
// scenario runs a source-controller of its own on the tmpfs, for the objects labelled with its
// shard key. Not parallel, as the other faults.
func TestScenarioFaultStorageFull(t *testing.T) {
	s := newScenario(t, "fault-storage")
	g := s.g
	storage := mountTmpfs(t, "256k")
	dir := t.TempDir()
	shard, err := harness.StartController(binDir, "source-controller", sys.Kubeconfig, dir, append(append([]string(nil), controllerArgs...),
		"--storage-path="+storage, "--watch-label-selector="+shardLabel+"="+storageShard)...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = shard.Stop(30 * time.Second) // before the tmpfs is unmounted
		if t.Failed() {
			t.Logf("source-controller of the shard, last lines:\n%s", shard.LogTail(40))
		}
	})
	readyCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g.Expect(shard.WaitReady(readyCtx)).To(Succeed())

	s.gitSecret(s.ns, "git-credentials")
	repo, rev := s.newRepo("fault-storage", apps(1, "v1"))
	s.create(faultStorageObjects, "__URL__", repo.HTTPURL())
	source := settled(g, gitRepositoryGVK, s.ns, "app", Equal("True|Succeeded|stored artifact for revision 'master@sha1:"+rev+"'"), nil)
	artifactURL, digest := str(source, "status", "artifact", "url"), str(source, "status", "artifact", "digest")
	g.Expect(artifactURL).To(HavePrefix("http://"+shard.StorageAddr+"/"), "served by the shard's source-controller")
	stored := []string{".artifact-url-key", "gitrepository/" + s.ns + "/app/" + rev + ".tar.gz", "gitrepository/" + s.ns + "/app/latest.tar.gz"}
	g.Expect(storageFiles(g, storage)).To(ConsistOf(stored))

	// 512 KiB that no compression shrinks: the artifact does not fit.
	big := apps(1, "v1")
	big["data/blob.bin"] = randomBytes(512 << 10)
	next := repo.Commit(t, "Add a blob", big)

	g.Eventually(readyOf(gitRepositoryGVK, s.ns, "app"), timeout).Should(And(
		HavePrefix("False|ArchiveOperationFailed|"), ContainSubstring("artifact storage is full (ENOSPC)"), ContainSubstring(next)))
	t.Logf("GitRepository: %s", readyOf(gitRepositoryGVK, s.ns, "app")(g))
	obj := mustObject(g, gitRepositoryGVK, s.ns, "app")
	artifactKept(g, obj, "master@sha1:"+rev, digest)

	// No partial file: once the retries stop (suspended), the storage holds the last artifact
	// and nothing else.
	g.Eventually(func(g Gomega) {
		obj := mustObject(g, gitRepositoryGVK, s.ns, "app")
		g.Expect(unstructured.SetNestedField(obj.Object, true, "spec", "suspend")).To(Succeed())
		g.Expect(k8s().Update(context.Background(), obj)).To(Succeed())
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return storageFiles(g, storage) }, timeout).Should(ConsistOf(stored))
	g.Expect(strings.Join(storageFiles(g, storage), " ")).NotTo(ContainSubstring(".tmp-"))
	artifactKept(g, mustObject(g, gitRepositoryGVK, s.ns, "app"), "master@sha1:"+rev, digest)

	// Space freed: the volume grows, and the next reconcile stores the new artifact.
	out, err := exec.Command("mount", "-o", "remount,size=4m", storage).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "remount: %s", out)
	g.Eventually(func(g Gomega) {
		obj := mustObject(g, gitRepositoryGVK, s.ns, "app")
		unstructured.RemoveNestedField(obj.Object, "spec", "suspend")
		g.Expect(k8s().Update(context.Background(), obj)).To(Succeed())
	}, timeout).Should(Succeed())
	source = settled(g, gitRepositoryGVK, s.ns, "app", Equal("True|Succeeded|stored artifact for revision 'master@sha1:"+next+"'"), func(g Gomega, obj *unstructured.Unstructured) {
		g.Expect(condition(obj, "StorageOperationFailed")).To(BeEmpty())
	})
	got := httpGet(g, str(source, "status", "artifact", "url"))
	g.Expect(got.Status).To(Equal(200))
	g.Expect(got.Digest).To(Equal(str(source, "status", "artifact", "digest")))
	g.Expect(got.Size).To(BeNumerically(">", 256<<10), "larger than the full volume was")
}
