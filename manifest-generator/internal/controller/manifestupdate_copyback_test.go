package controller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// Updaters run on a copy of the clone without .git; only files the change needs are copied back.
// An updater that does more than the change gets nothing pushed, to the repository or anywhere
// else, and the update is Stalled with VerificationFailed naming what it touched.
func TestManifestUpdateUpdaterDoesMoreThanTheChange(t *testing.T) {
	// Where a redirected push would go: a second server that takes anonymous pushes.
	elsewhere := testserver.NewGitServer(t, testserver.Options{}).NewRepo(t, "elsewhere")
	const setImage = `sed -i "s|image: ghcr.io/stefanprodan/podinfo:.*|image: $FLUX_IMG:$FLUX_TAG|" podinfo.yaml` + "\n"
	for _, tc := range []struct {
		name, updater, message string
	}{
		{"rewrites .git/config to push elsewhere",
			setImage + fmt.Sprintf("mkdir -p ../.git && printf '[remote \"origin\"]\\n\\turl = %s\\n' > ../.git/config\n", elsewhere.HTTPURL()),
			".git/config was added, outside the target path 'apps'"},
		{"edits a file outside the target path",
			setImage + "echo '# changed by the updater' >> ../README.md\n",
			"README.md was modified, outside the target path 'apps'"},
		{"adds a file",
			setImage + "echo 'apiVersion: v1' > extra.yaml\n",
			"apps/extra.yaml was added: updaters may only edit existing files"},
		{"changes more files than the runner sends back",
			setImage + "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo x > f$i.yaml; done\n",
			"nothing was pushed: the commands changed more than the runner's limit of 16 files (--max-changed-files)"},
		{"edits a file that takes no part in the change",
			setImage + "echo '# a comment' >> service.yaml\n",
			"the updaters changed files that take no part in the change, nothing was pushed: apps/service.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			files := commandUpdatedFiles("#!/bin/sh\nset -e\n" + tc.updater)
			files["README.md"] = "# fleet\n"
			f := newUpdateFixture(t, files)
			key := f.createUpdate(t, imageUpdate)
			g.Eventually(updateReady(key), timeout).Should(HavePrefix("False|VerificationFailed|"))
			msg := updateReady(key)(g)
			t.Log(msg)
			g.Expect(msg).To(ContainSubstring(tc.message))
			g.Expect(conditions.IsStalled(getUpdate(g, key))).To(BeTrue())
			g.Expect(f.head(t)).To(Equal(f.base), "nothing pushed to the repository")
			g.Expect(git(t, elsewhere.Dir, "for-each-ref")).To(BeEmpty(), "nothing pushed elsewhere")
		})
	}
}

// A change spread over several files is pushed when each file takes part in it: here the
// image's name and tag live in two files.
func TestManifestUpdateUpdaterChangesSeveralFiles(t *testing.T) {
	g := NewWithT(t)
	files := commandUpdatedFiles(`#!/bin/sh
set -e
echo "$FLUX_IMG" > name.txt
echo "$FLUX_TAG" > tag.txt
`)
	files["apps/.flux.yaml"] = `version: 1
commandUpdated:
  generators:
    - command: sh ./generate.sh
  updaters:
    - containerImage:
        command: sh ./update.sh
`
	files["apps/generate.sh"] = `sed "s|image: ghcr.io/stefanprodan/podinfo:6.0.0|image: $(cat name.txt):$(cat tag.txt)|" podinfo.yaml` + "\ncat service.yaml\n"
	files["apps/name.txt"] = "ghcr.io/stefanprodan/podinfo\n"
	files["apps/tag.txt"] = "6.0.0\n"
	f := newUpdateFixture(t, files)
	key := f.createUpdate(t, strings.Replace(imageUpdate, "image: ghcr.io/stefanprodan/podinfo:6.1.0", "image: docker.io/stefanprodan/podinfo:6.1.0", 1))
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/name.txt", "apps/tag.txt"}))
	g.Expect(f.fileAtHead(t, "apps/name.txt")).To(Equal("docker.io/stefanprodan/podinfo"))
	g.Expect(f.fileAtHead(t, "apps/tag.txt")).To(Equal("6.1.0"))
}
