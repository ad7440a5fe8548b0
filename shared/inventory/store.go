package inventory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/sluice-gitops/sluice/shared/apply"
)

// DefaultLimit is the size of the entries (as JSON) an owner's status holds, about 10,000 objects:
// a third of what etcd takes, so that the rest of the status and the spec still fit.
const DefaultLimit = 512 << 10

// Store reads and writes the chunks of the owners of one controller. It is safe for concurrent
// use; one owner is reconciled by one worker at a time.
type Store struct {
	// Client writes and deletes chunks as the controller, not as an owner's account: a chunk is
	// the controller's record, as the status is.
	Client client.Client
	// Reader reads chunks uncached: a controller does not watch every ConfigMap of the cluster.
	Reader client.Reader
	// Label is the key of the label that names a chunk's owner by UID.
	Label string
	// Limit is the size of the entries kept in the status; past it they spill into chunks.
	// 0 is DefaultLimit.
	Limit int

	mu sync.Mutex
	// memo is the last inventory each owner read or wrote in chunks. Chunks are named by their
	// digest, so a memo with the same names is what the API holds: reading it again costs no
	// request.
	memo map[types.NamespacedName]memo
}

type memo struct {
	uid     types.UID
	names   []string
	entries []apply.Entry
}

// Expand is the whole inventory of owner, whose status lists status: the status itself, or the
// entries of the chunks it names. A chunk that is gone or does not hold what its name says is an
// ErrUnreadable error.
func (s *Store) Expand(ctx context.Context, owner client.Object, status []apply.Entry) ([]apply.Entry, error) {
	names, ok := chunkNames(owner.GetNamespace(), status)
	if !ok {
		return status, nil
	}
	if m, ok := s.recall(owner); ok && slices.Equal(m.names, names) {
		return m.entries, nil
	}
	var entries []apply.Entry
	for _, name := range names {
		cm := &corev1.ConfigMap{}
		if err := s.Reader.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, cm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("%w: ConfigMap %s/%s is gone", ErrUnreadable, owner.GetNamespace(), name)
			}
			return nil, err
		}
		part, err := decode(string(owner.GetUID()), name, cm.BinaryData[dataKey])
		if err != nil {
			return nil, err
		}
		entries = append(entries, part...)
	}
	s.remember(owner, memo{names: names, entries: entries})
	return entries, nil
}

// Spill is what owner's status lists for the inventory entries: entries themselves up to the
// limit, past it the chunks that hold them, written unless they exist.
func (s *Store) Spill(ctx context.Context, owner client.Object, entries []apply.Entry) ([]apply.Entry, error) {
	limit := s.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if size(entries) <= limit {
		// What is remembered is of chunks that are to go.
		s.Forget(client.ObjectKeyFromObject(owner))
		return entries, nil
	}
	chunks, err := encode(string(owner.GetUID()), entries)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(chunks))
	refs := make([]apply.Entry, len(chunks))
	for i, c := range chunks {
		names[i], refs[i] = c.name, ref(owner.GetNamespace(), c.name)
	}
	if m, ok := s.recall(owner); ok && slices.Equal(m.names, names) {
		return refs, nil
	}
	for _, c := range chunks {
		if err := s.write(ctx, owner, c); err != nil {
			return nil, err
		}
	}
	s.remember(owner, memo{names: names, entries: entries})
	return refs, nil
}

// write creates a chunk. One that exists already is checked: a ConfigMap of the same name that
// does not hold the chunk (a tenant's) is replaced.
func (s *Store) write(ctx context.Context, owner client.Object, c chunk) error {
	immutable := true
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: c.name, Labels: map[string]string{s.Label: string(owner.GetUID())}},
		Immutable:  &immutable,
		BinaryData: map[string][]byte{dataKey: c.data},
	}
	if err := controllerutil.SetOwnerReference(owner, cm, s.Client.Scheme()); err != nil {
		return err
	}
	err := s.Client.Create(ctx, cm)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing := &corev1.ConfigMap{}
	if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(cm), existing); err != nil {
		return err
	}
	if _, err := decode(string(owner.GetUID()), c.name, existing.BinaryData[dataKey]); err == nil {
		return nil
	}
	if err := s.Client.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); client.IgnoreNotFound(err) != nil {
		return err
	}
	return s.Client.Create(ctx, cm)
}

// Collect deletes owner's chunks that status does not list: those of earlier inventories (all of
// them when status is nil, as the owner goes).
func (s *Store) Collect(ctx context.Context, owner client.Object, status []apply.Entry) error {
	keep, _ := chunkNames(owner.GetNamespace(), status)
	var list corev1.ConfigMapList
	if err := s.Reader.List(ctx, &list, client.InNamespace(owner.GetNamespace()),
		client.MatchingLabels{s.Label: string(owner.GetUID())}); err != nil {
		return err
	}
	for i := range list.Items {
		cm := &list.Items[i]
		if !isChunkName(cm.Name) || slices.Contains(keep, cm.Name) {
			continue
		}
		if err := s.Client.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if m, ok := s.recall(owner); ok && !slices.Equal(m.names, keep) {
		s.Forget(client.ObjectKeyFromObject(owner))
	}
	return nil
}

// Spilled says whether status lists chunks rather than the objects themselves.
func Spilled(namespace string, status []apply.Entry) bool {
	_, ok := chunkNames(namespace, status)
	return ok
}

// Forget drops what is remembered of an owner that is gone.
func (s *Store) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.memo, key)
}

// recall is the memo of owner, unless it was of another owner of the same name.
func (s *Store) recall(owner client.Object) (memo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.memo[client.ObjectKeyFromObject(owner)]
	return m, ok && m.uid == owner.GetUID()
}

func (s *Store) remember(owner client.Object, m memo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.memo == nil {
		s.memo = map[types.NamespacedName]memo{}
	}
	m.uid = owner.GetUID()
	s.memo[client.ObjectKeyFromObject(owner)] = m
}
