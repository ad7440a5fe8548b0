package testserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// ObjectStore is a real S3-compatible server: Versity's S3 gateway (bin/versitygw, built by `make
// tools` from github.com/versity/versitygw) over a directory of its own, on loopback, plain HTTP.
// It is the store that source-controller replicas share their artifacts through; the Bucket
// source's tests keep their in-process double (NewS3).
type ObjectStore struct {
	endpoint string
	root     string
	// AccessKey and SecretKey are the root user's, which may do anything.
	AccessKey, SecretKey string
	buckets              atomic.Int64
}

// NewObjectStore starts a gateway, stopped when the test ends. It fails the test, naming `make
// tools`, when bin/versitygw is missing.
func NewObjectStore(t testing.TB) *ObjectStore {
	t.Helper()
	repo, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(repo, "bin")
	if err := testenv.CheckBinaries(bin, "versitygw"); err != nil {
		t.Fatalf("%v: run `make tools`", err)
	}
	dir := t.TempDir()
	s := &ObjectStore{root: filepath.Join(dir, "data"), AccessKey: "sluice-root", SecretKey: "sluice-root-secret-key"}
	for _, d := range []string{s.root, filepath.Join(dir, "meta")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.endpoint = l.Addr().String()
	l.Close()

	logf := cleanupSafeLogf(t)
	cmd := exec.Command(filepath.Join(bin, "versitygw"), "--port", s.endpoint, "--quiet",
		"--access", s.AccessKey, "--secret", s.SecretKey,
		"posix", "--sidecar", filepath.Join(dir, "meta"), s.root)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	cmd.Stdout, cmd.Stderr = logWriter(logf), logWriter(logf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	// Any HTTP answer, an anonymous request's 403 included, says it serves.
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("http://" + s.endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return s
		}
		select {
		case err := <-exited:
			t.Fatalf("versitygw exited before answering on %s: %v (its log is above)", s.endpoint, err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not answer on %s within 30s", s.endpoint)
		}
	}
}

// Endpoint is host:port, plain HTTP.
func (s *ObjectStore) Endpoint() string { return s.endpoint }

// NewBucket creates an empty bucket with a name of its own, through the S3 API, and returns the
// name.
func (s *ObjectStore) NewBucket(t testing.TB) string {
	t.Helper()
	c, err := minio.New(s.endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("bucket-%d", s.buckets.Add(1))
	if err := c.MakeBucket(context.Background(), name, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
	return name
}
