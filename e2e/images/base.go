package images

import (
	"fmt"
	"os"
)

// The user the images run as: distroless's "nonroot", the user of the Deployments'
// securityContext.
const (
	UID  = 65532
	User = "65532:65532"
)

// CABundle is where the images keep the CA certificates: the path Go's crypto/x509 and Debian's
// libcurl read, and where the host has those of Debian's ca-certificates package.
const CABundle = "/etc/ssl/certs/ca-certificates.crt"

// base is the filesystem every image starts from, what distroless/static:nonroot gives the
// Dockerfiles: users and groups root, nobody and nonroot, name resolution through /etc/hosts
// then DNS, the CA certificates, a world-writable /tmp and nonroot's home.
func base() (*tree, error) {
	if _, err := os.Stat(CABundle); err != nil {
		return nil, fmt.Errorf("the CA certificates are needed (apt-get install ca-certificates): %w", err)
	}
	t := newTree()
	t.file("/etc/passwd", 0o644, []byte(
		"root:x:0:0:root:/root:/sbin/nologin\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"+
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
	t.file("/etc/group", 0o644, []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"))
	t.file("/etc/nsswitch.conf", 0o644, []byte("passwd: files\ngroup: files\nhosts: files dns\n"))
	if err := t.copy(CABundle, CABundle); err != nil {
		return nil, err
	}
	t.dir("/tmp", 0o1777, 0, 0)
	t.dir("/root", 0o700, 0, 0)
	t.dir("/home/nonroot", 0o700, UID, UID)
	return t, nil
}
