package testserver

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	. "github.com/onsi/gomega"
)

// s3Client is a client of the server as the source-controller makes one (minio-go).
func s3Client(t *testing.T, s *S3, accessKey, secretKey string) *minio.Client {
	t.Helper()
	opts := &minio.Options{Secure: s.TLSConfig() != nil}
	if accessKey != "" {
		opts.Creds = credentials.NewStaticV4(accessKey, secretKey, "")
	}
	if cfg := s.TLSConfig(); cfg != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = cfg
		opts.Transport = tr
	}
	c, err := minio.New(s.Endpoint(), opts)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

func listKeys(c *minio.Client, bucket, prefix string) ([]string, error) {
	var keys []string
	for o := range c.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		keys = append(keys, o.Key+" "+o.ETag)
	}
	return keys, nil
}

// Objects put are listed with the MD5 of their content as ETag and read back; only GETs of
// content are counted; a deleted object is gone.
func TestS3ServesObjects(t *testing.T) {
	g := NewWithT(t)
	s := NewS3(t, S3Options{})
	s.Put(t, "manifests", "app/a.yaml", "a")
	s.Put(t, "manifests", "app/sub/b.yaml", "b")
	s.Put(t, "manifests", "other.yaml", "o")
	c := s3Client(t, s, "", "")

	keys, err := listKeys(c, "manifests", "app/")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(ConsistOf(
		"app/a.yaml 0cc175b9c0f1b6a831c399e269772661", // md5("a")
		"app/sub/b.yaml 92eb5ffee6ae2fec3ad71c777531578f",
	))
	g.Expect(s.Gets("manifests")).To(BeZero())

	obj, err := c.GetObject(context.Background(), "manifests", "app/a.yaml", minio.GetObjectOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	body, err := io.ReadAll(obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(body)).To(Equal("a"))
	g.Expect(s.Gets("manifests")).To(Equal(1))

	s.Delete(t, "manifests", "app/a.yaml")
	keys, err = listKeys(c, "manifests", "app/")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(ConsistOf("app/sub/b.yaml 92eb5ffee6ae2fec3ad71c777531578f"))
}

// With keys, a request signed with them passes; a wrong secret key, an unknown access key and an
// unsigned request are refused as S3 refuses them. Over TLS, the CA is the server's.
func TestS3ChecksSignatures(t *testing.T) {
	g := NewWithT(t)
	s := NewS3(t, S3Options{AccessKey: "AKIDEXAMPLE", SecretKey: "wJalrXUtnFEMI", TLS: true})
	s.Put(t, "manifests", "dir with space/x+y.yaml", "x")
	g.Expect(s.CAPEM()).To(ContainSubstring("BEGIN CERTIFICATE"))

	keys, err := listKeys(s3Client(t, s, "AKIDEXAMPLE", "wJalrXUtnFEMI"), "manifests", "dir with space/")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(HaveLen(1))

	_, err = listKeys(s3Client(t, s, "AKIDEXAMPLE", "wrong"), "manifests", "")
	g.Expect(minio.ToErrorResponse(err).Code).To(Equal("SignatureDoesNotMatch"))
	_, err = listKeys(s3Client(t, s, "nobody", "wJalrXUtnFEMI"), "manifests", "")
	g.Expect(minio.ToErrorResponse(err).Code).To(Equal("InvalidAccessKeyId"))
	_, err = listKeys(s3Client(t, s, "", ""), "manifests", "")
	g.Expect(minio.ToErrorResponse(err).Code).To(Equal("AccessDenied"))
}

// A server that requires client certificates refuses a client without one and serves a client
// with a certificate it issued.
func TestS3RequiresClientCertificates(t *testing.T) {
	g := NewWithT(t)
	s := NewS3(t, S3Options{TLS: true, ClientCert: true})
	s.Put(t, "manifests", "a.yaml", "a")

	_, err := listKeys(s3Client(t, s, "", ""), "manifests", "")
	g.Expect(err).To(HaveOccurred())

	certPEM, keyPEM := s.ClientCertPEM(t)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	g.Expect(err).NotTo(HaveOccurred())
	cfg := s.TLSConfig()
	cfg.Certificates = []tls.Certificate{pair}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	c, err := minio.New(s.Endpoint(), &minio.Options{Secure: true, Transport: tr})
	g.Expect(err).NotTo(HaveOccurred())
	keys, err := listKeys(c, "manifests", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(HaveLen(1))
}
