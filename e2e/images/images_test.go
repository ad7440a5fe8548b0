package images_test

import (
	"archive/tar"
	"bufio"
	"cmp"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/e2e/images"
)

// Each image is what its controller's Dockerfile describes (its final stage's USER and
// ENTRYPOINT, the binary of bin/ in /usr/local/bin) and holds what its Deployment relies on: the
// user of the containers' securityContext, with its passwd and group entries, the CA
// certificates, a /tmp; and, for the manifest-generator, the commands of --generator-path.
func TestImagesMatchDockerfiles(t *testing.T) {
	for _, c := range images.Controllers {
		t.Run(c, func(t *testing.T) {
			g := NewWithT(t)
			img := readImage(t, c)
			// The archive's blobs agree with the manifest and the configuration: digests, sizes,
			// and the uncompressed digests of the layers.
			g.Expect(validate.Image(img)).To(Succeed())
			mt, err := img.MediaType()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(mt).To(Equal(types.DockerManifestSchema2))

			cfg, err := img.ConfigFile()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.OS).To(Equal("linux"))
			g.Expect(cfg.Architecture).To(Equal(runtime.GOARCH), "make build builds bin/ for this machine")
			user, entrypoint := dockerfileFinal(t, c)
			g.Expect(cfg.Config.User).To(Equal(user))
			g.Expect(cfg.Config.Entrypoint).To(Equal(entrypoint))
			g.Expect(cfg.Config.Cmd).To(BeEmpty())

			// The Deployment's containers that must not run as root run as the image's user:
			// the kubelet admits runAsNonRoot only with a numeric, non-zero user.
			dep := readDeployment(t, c)
			uid, gid, _ := strings.Cut(cfg.Config.User, ":")
			g.Expect(strconv.Atoi(uid)).To(BeNumerically(">", 0))
			pod := dep.Spec.Template.Spec.SecurityContext
			nonRoot := 0
			for _, ctr := range dep.Spec.Template.Spec.Containers {
				sc := ctr.SecurityContext
				if sc == nil {
					sc = &corev1.SecurityContext{}
				}
				runAsNonRoot, runAsUser, runAsGroup := sc.RunAsNonRoot, sc.RunAsUser, sc.RunAsGroup
				if pod != nil {
					runAsNonRoot = cmp.Or(runAsNonRoot, pod.RunAsNonRoot)
					runAsUser, runAsGroup = cmp.Or(runAsUser, pod.RunAsUser), cmp.Or(runAsGroup, pod.RunAsGroup)
				}
				if runAsNonRoot == nil || !*runAsNonRoot {
					continue // the manifest-generator's runner, root to switch users
				}
				nonRoot++
				if runAsUser != nil {
					g.Expect(fmt.Sprint(*runAsUser)).To(Equal(uid), "container %s runs as the image's user", ctr.Name)
				}
				if runAsGroup != nil {
					g.Expect(fmt.Sprint(*runAsGroup)).To(Equal(gid), "container %s runs as the image's group", ctr.Name)
				}
			}
			g.Expect(nonRoot).To(BeNumerically(">", 0))

			fs := squash(t, img)
			bin := fs.headers[entrypoint[0]]
			g.Expect(bin).NotTo(BeNil(), "the entrypoint %s", entrypoint[0])
			g.Expect(bin.Typeflag).To(Equal(byte(tar.TypeReg)))
			g.Expect(bin.Mode & 0o7777).To(Equal(int64(0o755)))
			g.Expect(fs.sums[entrypoint[0]]).To(Equal(fileSum(t, filepath.Join(root, "bin", c))), "the binary of bin/")
			if c == "gating-controller" {
				// The pages of kubectl gate ui, served by deploy/components/dashboard, as the
				// Dockerfile copies them.
				g.Expect(dockerfileCopies(t, c)).To(ContainElement("/usr/local/bin/kubectl-gate"))
				g.Expect(fs.sums["/usr/local/bin/kubectl-gate"]).To(Equal(fileSum(t, filepath.Join(root, "bin", "kubectl-gate"))))
				g.Expect(fs.headers["/usr/local/bin/kubectl-gate"].Mode & 0o7777).To(Equal(int64(0o755)))
			}

			g.Expect(lines(fs.contents["/etc/passwd"])).To(ContainElement(HavePrefix("nonroot:x:" + uid + ":" + gid + ":")))
			g.Expect(lines(fs.contents["/etc/group"])).To(ContainElement("nonroot:x:" + gid + ":"))
			g.Expect(fs.headers["/home/nonroot"]).NotTo(BeNil())
			g.Expect(fmt.Sprint(fs.headers["/home/nonroot"].Uid)).To(Equal(uid))
			g.Expect(fs.headers["/tmp"]).NotTo(BeNil())
			g.Expect(fs.headers["/tmp"].Mode & 0o7777).To(Equal(int64(0o1777)))
			g.Expect(cfg.Config.Env).To(ContainElement("SSL_CERT_FILE=" + images.CABundle))

			// The CA certificates of Debian's ca-certificates, each one a certificate Go parses.
			bundle := fs.contents[images.CABundle]
			g.Expect(fs.sums[images.CABundle]).To(Equal(fileSum(t, "/etc/ssl/certs/ca-certificates.crt")))
			certs := 0
			for rest := bundle; ; {
				var block *pem.Block
				if block, rest = pem.Decode(rest); block == nil {
					break
				}
				_, err := x509.ParseCertificate(block.Bytes)
				g.Expect(err).NotTo(HaveOccurred())
				certs++
			}
			g.Expect(certs).To(BeNumerically(">", 50))

			// Everything is readable by everyone: the manifest-generator's runner runs its
			// sessions as users of their own, and the other images run as nonroot.
			for p, hdr := range fs.headers {
				if hdr.Typeflag == tar.TypeReg {
					g.Expect(hdr.Mode&0o004).NotTo(BeZero(), "%s is readable by everyone", p)
				}
			}

			if c != "manifest-generator" {
				// distroless/static: a static binary, no shell.
				g.Expect(fs.headers).NotTo(HaveKey("/bin/sh"))
				return
			}
			path := generatorPath(t, dep)
			for _, tool := range []string{"sh", "git", "kustomize", "helm"} {
				_, err := fs.lookPath(tool, path)
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(fs.sums["/usr/local/bin/kustomize"]).To(Equal(fileSum(t, filepath.Join(root, "bin", "kustomize"))))
			g.Expect(fs.sums["/usr/local/bin/helm"]).To(Equal(fileSum(t, filepath.Join(root, "bin", "helm"))))
		})
	}
}

// dockerfileFinal reads the USER and ENTRYPOINT of the last stage of a controller's Dockerfile.
func dockerfileFinal(t *testing.T, controller string) (user string, entrypoint []string) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, controller, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		word, rest, _ := strings.Cut(strings.TrimSpace(s.Text()), " ")
		switch word {
		case "FROM":
			user, entrypoint = "", nil
		case "USER":
			user = strings.TrimSpace(rest)
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &entrypoint); err != nil {
				t.Fatalf("%s's ENTRYPOINT is not in exec form: %v", controller, err)
			}
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if user == "" || len(entrypoint) == 0 {
		t.Fatalf("%s's Dockerfile: no USER or ENTRYPOINT in its last stage", controller)
	}
	return user, entrypoint
}

// dockerfileCopies are the destinations of the COPY lines of the controller's Dockerfile's last
// stage.
func dockerfileCopies(t *testing.T, controller string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, controller, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var copies []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) > 0 && fields[0] == "FROM":
			copies = nil
		case len(fields) > 2 && fields[0] == "COPY":
			copies = append(copies, fields[len(fields)-1])
		}
	}
	return copies
}

func readDeployment(t *testing.T, controller string) *appsv1.Deployment {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "deploy", controller, "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := yaml.UnmarshalStrict(raw, &dep); err != nil {
		t.Fatal(err)
	}
	return &dep
}

// generatorPath is the manifest-generator Deployment's --generator-path, the PATH of the
// .flux.yaml commands.
func generatorPath(t *testing.T, dep *appsv1.Deployment) string {
	t.Helper()
	for _, ctr := range dep.Spec.Template.Spec.Containers {
		for _, arg := range ctr.Args {
			if v, ok := strings.CutPrefix(arg, "--generator-path="); ok {
				return v
			}
		}
	}
	t.Fatal("the manifest-generator Deployment sets no --generator-path")
	return ""
}

func fileSum(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func lines(b []byte) []string { return strings.Split(strings.TrimSpace(string(b)), "\n") }
