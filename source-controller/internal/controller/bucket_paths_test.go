package controller

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// Regression for Flux source-controller CVE-2026-47680, where a Bucket object key escaped the
// artifact directory: S3 keys are any bytes, and a key that is not a plain relative path would
// be downloaded outside the directory the artifact is assembled in. The keys are put into the
// S3 server of shared/testserver (gofakes3 over HTTP, which stores and lists any key as S3 does,
// URL-encoded as minio-go asks, so a NUL byte reaches the controller) and fetched by the Bucket
// reconciler. A key that cannot be a path inside the artifact refuses the whole Bucket, with a
// BucketOperationFailed condition that names the key and says what to fix, and the last good
// artifact stays served: skipping the object would store an artifact without it, and its
// consumers would prune what it holds. Keys with backslashes are plain file names on Linux,
// where the controller and its consumers run, and are stored as such. In every case nothing
// is written outside the working directory (the sentinel around TMPDIR stays empty) and the
// stored artifact has no entry outside its root.
//
// Checked against reintroduced bugs (then restored):
//   - without the key check of listIndex (objectKeyError returning nil, no dirConflicts), as
//     before this test, only the os.Root of fetchObjects refuses, with OS errors that say
//     nothing of what to fix: every refused case fails on its condition, e.g. "fetching from
//     bucket 'manifests': object '../x': mkdirat ..: path escapes from parent", "object
//     'app/a/b': mkdirat app/a: file exists", "openat ./.: is a directory", and for the NUL key
//     "invalid argument" with the raw NUL byte in the message.
//   - with, in addition, fetchObjects writing to filepath.Join(dir, key) instead of through the
//     os.Root (Flux's bug): expectNothingEscaped finds 'escaped-dotdot' and 'escaped-inner'
//     written beside TMPDIR; '../x' lands in the working directory's parent (removed with it),
//     stored as True and caught by the condition; the absolute key stays inside, as
//     filepath.Join does not restart at an absolute element.
//   - with the S3 server's listings not URL-encoded (shared/testserver before this test), the NUL
//     key reaches the controller as U+FFFD, whose download is not found: the object is dropped
//     without a word (Ready=True), and the NUL case fails on its condition.
func TestBucketObjectKeysOutsideTheArtifact(t *testing.T) {
	g := NewWithT(t)
	sentinel := pathsSentinel(t)
	ns := env.Namespace(t)
	bucketController(t)
	s3 := testserver.NewS3(t, testserver.S3Options{})
	good := map[string]string{"app/deploy.yaml": "kind: Deployment\n", "app/svc.yaml": "kind: Service\n"}
	for k, v := range good {
		s3.Put(t, "manifests", k, v)
	}
	key := createBucket(t, ns, "keys", sourcev1.BucketSpec{BucketName: "manifests", Endpoint: s3.Endpoint(), Insecure: true})
	goodRev := wantRevision(good)
	g.Eventually(bucketRevision(key), timeout).Should(Equal(goodRev))
	served := fetchBucketArtifact(t, key)

	long := strings.Repeat("n", 4096)
	for _, tc := range []struct {
		name string
		keys []string
		// message is what the Ready condition says (BucketOperationFailed); empty when the keys
		// are stored.
		message string
	}{
		{name: "parent", keys: []string{"../x"},
			message: "object key '../x' climbs out of the artifact with '..'"},
		{name: "parent to the sentinel", keys: []string{"../../../escaped-dotdot"},
			message: "object key '../../../escaped-dotdot' climbs out of the artifact with '..'"},
		{name: "absolute", keys: []string{filepath.Join(sentinel, "escaped-abs")},
			message: "object key '" + filepath.Join(sentinel, "escaped-abs") + "' is an absolute path"},
		{name: "inner parent", keys: []string{"a/../../b"},
			message: "object key 'a/../../b' climbs out of the artifact with '..'"},
		{name: "inner parent to the sentinel", keys: []string{"a/../../../../escaped-inner"},
			message: "object key 'a/../../../../escaped-inner' climbs out of the artifact with '..'"},
		{name: "NUL byte", keys: []string{"app/evil\x00.yaml"},
			message: `object key 'app/evil\x00.yaml' holds a NUL byte`},
		{name: "dot", keys: []string{"./."},
			message: "object key './.' has a '.' component"},
		{name: "4 KiB name", keys: []string{long},
			message: "object key '" + long[:64] + "...' (4096 bytes) has a name of 4096 bytes, longer than the 255 a file name may have"},
		{name: "file and directory", keys: []string{"app/a", "app/a/b"},
			message: "object key 'app/a' is also the directory of 'app/a/b'"},
		{name: "backslashes", keys: []string{`..\..\..\escaped-backslash`, `app\evil.yaml`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			objects := map[string]string{}
			for k, v := range good {
				objects[k] = v
			}
			for _, k := range tc.keys {
				s3.Put(t, "manifests", k, escapedMarker+tc.name)
				objects[k] = escapedMarker + tc.name
				defer s3.Delete(t, "manifests", k) // also when the case fails
			}
			pokeBucket(t, key)
			bucketObserved(t, key)
			expectNothingEscaped(t, sentinel)
			expectEntriesInside(t, getBucket(g, key).Status.Artifact.URL)
			if tc.message == "" {
				g.Expect(bucketRevision(key)(g)).To(Equal(wantRevision(objects)))
				g.Expect(fetchBucketArtifact(t, key)).To(Equal(objects))
			} else {
				g.Expect(bucketCondition(key, meta.ReadyCondition)(g)).To(Equal("False|" +
					sourcev1.BucketOperationFailedReason + "|bucket 'manifests': " + tc.message +
					": rename or delete the object, or leave it out with spec.ignore or spec.prefix"))
				obj := getBucket(g, key)
				g.Expect(obj.Status.Artifact.Revision).To(Equal(goodRev))
				g.Expect(fetchBucketArtifact(t, key)).To(Equal(served))
			}

			for _, k := range tc.keys {
				s3.Delete(t, "manifests", k)
			}
			pokeBucket(t, key)
			g.Eventually(bucketCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|Succeeded|stored artifact: revision '" + goodRev + "'"))
		})
	}

	// The fix the message offers: spec.ignore leaves the object out, and the rest is served.
	s3.Put(t, "manifests", "../x", escapedMarker+"ignored")
	updateBucket(t, key, func(s *sourcev1.BucketSpec) { s.Ignore = ptr.To("x\n") })
	g.Eventually(bucketCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|Succeeded|stored artifact: revision '" + goodRev + "'"))
	g.Expect(fetchBucketArtifact(t, key)).To(Equal(good))
	expectNothingEscaped(t, sentinel)
}

// The keys a Bucket's artifact can hold, and why the others cannot (Flux source-controller
// CVE-2026-47680's class: see TestBucketObjectKeysOutsideTheArtifact).
//
// Checked against a reintroduced bug (then restored): with objectKeyError returning nil and
// dirConflicts finding nothing, the first refused key is accepted and the test fails.
func TestBucketObjectKeyError(t *testing.T) {
	name255, name256 := strings.Repeat("n", 255), strings.Repeat("n", 256)
	for key, want := range map[string]string{
		"app/deploy.yaml":     "",
		`app\win\deploy.yaml`: "",
		"app/a..b/c.yaml":     "",
		"app/\x01.yaml":       "",
		"app/" + name255:      "",
		"":                    "an object key is empty",
		"../x":                "object key '../x' climbs out of the artifact with '..'",
		"a/..":                "object key 'a/..' has a '..' component",
		"a/../b":              "object key 'a/../b' has a '..' component",
		"a/./b":               "object key 'a/./b' has a '.' component",
		"a//b":                "object key 'a//b' has an empty name between two '/'",
		"/a":                  "object key '/a' is an absolute path",
		"a\x00":               `object key 'a\x00' holds a NUL byte`,
		"app/" + name256:      "object key 'app/" + name256[:60] + "...' (260 bytes) has a name of 256 bytes, longer than the 255 a file name may have",
	} {
		err := objectKeyError(key)
		if want == "" {
			NewWithT(t).Expect(err).NotTo(HaveOccurred(), key)
			continue
		}
		NewWithT(t).Expect(err).To(MatchError(want), key)
	}
	NewWithT(t).Expect(bucketIndex{"a": {}, "a/b/c": {}, "b/c": {}, "b/d": {}, "c": {}, "cd/e": {}}.dirConflicts()).To(
		ConsistOf(MatchError("object key 'a' is also the directory of 'a/b/c'")))
}
