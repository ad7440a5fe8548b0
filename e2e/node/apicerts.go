package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// apiServerCerts are the files of an API server that pods reach through the kubernetes Service:
// a serving certificate valid for the Service's names and address besides loopback, the CA that
// signed it, and the ServiceAccount token signing key.
type apiServerCerts struct {
	// CA is the CA's certificate (PEM): the kubeconfig's, and the pods' ca.crt through the
	// kube-root-ca.crt ConfigMaps (the kube-controller-manager's --root-ca-file).
	CA     []byte
	CAFile string
	// SigningKeyFile is the ServiceAccount tokens' key (PEM, private): the API server's
	// --service-account-signing-key-file and --service-account-key-file (which derives the
	// public key), and the kube-controller-manager's --service-account-private-key-file.
	SigningKeyFile string
}

// writeAPIServerCerts writes apiserver.crt and apiserver.key into certDir, where kube-apiserver
// (--cert-dir) and envtest look for them, valid for localhost, 127.0.0.1, the given addresses and
// the kubernetes Service's DNS names; and ca.crt and sa-signer.key beside them.
func writeAPIServerCerts(certDir string, ips ...net.IP) (*apiServerCerts, error) {
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice-node-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: append([]net.IP{net.IPv4(127, 0, 0, 1)}, ips...),
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, serving, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	signingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	c := &apiServerCerts{
		CA:             pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		CAFile:         filepath.Join(certDir, "ca.crt"),
		SigningKeyFile: filepath.Join(certDir, "sa-signer.key"),
	}
	files := map[string][]byte{
		"apiserver.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servingDER}),
		"ca.crt":        c.CA,
	}
	for name, k := range map[string]*ecdsa.PrivateKey{"apiserver.key": key, "sa-signer.key": signingKey} {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, err
		}
		files[name] = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}
