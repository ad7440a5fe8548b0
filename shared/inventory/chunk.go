// Package inventory keeps an owner's inventory when it is too large for its status. A
// ResourceSet of 25,000 objects has an inventory of about 1.25 MB, and etcd refuses an object over
// 1.5 MiB: past a limit, the entries go into immutable ConfigMaps beside the owner, gzip'd JSON,
// each named by the digest of what it holds, and the status lists those ConfigMaps instead. The
// status still lists objects the owner keeps (Flux's `{id, v}` entries), only fewer of them.
//
// A chunk's name is its digest (of the owner's UID and the entries), so a chunk that was edited,
// replaced, or copied from another owner is detected and never trusted: an inventory that cannot
// be read is lost (nothing is pruned by it), never wrong.
package inventory

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sluice-gitops/sluice/shared/apply"
)

const (
	// namePrefix starts the name of every chunk; the digest follows.
	namePrefix = "sluice-inventory-"
	// dataKey is the key of a chunk's binaryData.
	dataKey = "entries.json.gz"
	// maxChunkBytes bounds a chunk's compressed data, well below a ConfigMap's 1 MiB.
	maxChunkBytes = 512 << 10
	// maxEntriesBytes bounds what a chunk may decompress to: a tenant's ConfigMap is not
	// inflated without end before its digest is checked.
	maxEntriesBytes = 64 << 20
)

// ErrUnreadable says that a chunk the status names is gone or is not what its name says.
var ErrUnreadable = errors.New("inventory chunk unreadable")

// entry is an inventory entry as the status writes it.
type entry struct {
	ID      string `json:"id"`
	Version string `json:"v"`
}

// chunk is one ConfigMap's worth of entries: its name and compressed data.
type chunk struct {
	name string
	data []byte
}

// size is an estimate of entries' JSON: what they would weigh in the status.
func size(entries []apply.Entry) int {
	n := 0
	for _, e := range entries {
		n += len(e.ID) + len(e.Version) + len(`{"id":"","v":""},`)
	}
	return n
}

// encode packs entries into chunks of at most maxChunkBytes, in order.
func encode(uid string, entries []apply.Entry) ([]chunk, error) {
	raw := make([]entry, len(entries))
	for i, e := range entries {
		raw[i] = entry(e)
	}
	js, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(js); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if buf.Len() > maxChunkBytes && len(entries) > 1 {
		half := len(entries) / 2
		first, err := encode(uid, entries[:half])
		if err != nil {
			return nil, err
		}
		rest, err := encode(uid, entries[half:])
		if err != nil {
			return nil, err
		}
		return append(first, rest...), nil
	}
	return []chunk{{name: chunkName(uid, js), data: buf.Bytes()}}, nil
}

// chunkName is the name of the chunk of an owner that holds the entries js.
func chunkName(uid string, js []byte) string {
	h := sha256.New()
	h.Write([]byte(uid))
	h.Write([]byte{0})
	h.Write(js)
	return namePrefix + hex.EncodeToString(h.Sum(nil))
}

// decode reads a chunk's entries, checking them against its name.
func decode(uid, name string, data []byte) ([]apply.Entry, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: ConfigMap %s: %v", ErrUnreadable, name, err)
	}
	js, err := io.ReadAll(io.LimitReader(zr, maxEntriesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: ConfigMap %s: %v", ErrUnreadable, name, err)
	}
	if len(js) > maxEntriesBytes || chunkName(uid, js) != name {
		return nil, fmt.Errorf("%w: ConfigMap %s does not hold what its name says", ErrUnreadable, name)
	}
	var raw []entry
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fmt.Errorf("%w: ConfigMap %s: %v", ErrUnreadable, name, err)
	}
	out := make([]apply.Entry, len(raw))
	for i, e := range raw {
		out[i] = apply.Entry(e)
	}
	return out, nil
}

// ref is the status entry of a chunk of an owner in namespace.
func ref(namespace, name string) apply.Entry {
	return apply.Entry{ID: namespace + "_" + name + "__ConfigMap", Version: "v1"}
}

// chunkNames are the chunks status names, when it names chunks only (a spilled inventory); ok is
// false for an inventory kept in the status.
func chunkNames(namespace string, status []apply.Entry) (names []string, ok bool) {
	if len(status) == 0 {
		return nil, false
	}
	for _, e := range status {
		name, found := strings.CutPrefix(e.ID, namespace+"_")
		if !found || e.Version != "v1" {
			return nil, false
		}
		name, found = strings.CutSuffix(name, "__ConfigMap")
		if !found || !isChunkName(name) {
			return nil, false
		}
		names = append(names, name)
	}
	return names, true
}

// isChunkName says whether name is that of a chunk: the prefix and a SHA-256 in hex.
func isChunkName(name string) bool {
	digest, ok := strings.CutPrefix(name, namePrefix)
	if !ok || len(digest) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(digest)
	return err == nil && strings.ToLower(digest) == digest
}
