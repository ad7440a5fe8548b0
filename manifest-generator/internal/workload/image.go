package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// containerFields are the pod spec lists whose containers SetImage updates.
var containerFields = []string{"initContainers", "containers"}

// ContainerNotFoundError says that a workload has no container of the
// requested name (or no pod template at all).
type ContainerNotFoundError struct {
	Kind      string
	Namespace string
	Name      string
	Container string
}

func (e *ContainerNotFoundError) Error() string {
	ref := Ref{Namespace: e.Namespace, Kind: e.Kind, Name: e.Name}
	return fmt.Sprintf("kind %s has no container %q (%s)", e.Kind, e.Container, ref)
}

// podSpecPath is where the pod spec of a workload lives: spec for a Pod,
// spec.jobTemplate.spec.template.spec for a CronJob and spec.template.spec
// for Deployment, StatefulSet, DaemonSet, ReplicaSet, Job and, on a best
// effort basis, custom resources shaped like them.
func podSpecPath(apiVersion, kind string) []string {
	group := ""
	if gv, err := schema.ParseGroupVersion(apiVersion); err == nil {
		group = gv.Group
	}
	switch {
	case group == "" && kind == "Pod":
		return []string{"spec"}
	case group == "batch" && kind == "CronJob":
		return []string{"spec", "jobTemplate", "spec", "template", "spec"}
	default:
		return []string{"spec", "template", "spec"}
	}
}

// SetImage sets the image of the container (or init container) named
// container in the pod template of u. It reports whether the image changed,
// and returns a *ContainerNotFoundError when there is no such container.
func SetImage(u *unstructured.Unstructured, container, image string) (bool, error) {
	notFound := &ContainerNotFoundError{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Container: container}
	// Walk the maps directly rather than through unstructured.NestedSlice,
	// which deep-copies and only accepts JSON-decoded value types.
	var spec any = u.Object
	for _, field := range podSpecPath(u.GetAPIVersion(), u.GetKind()) {
		m, ok := spec.(map[string]any)
		if !ok {
			return false, notFound
		}
		spec = m[field]
	}
	podSpec, ok := spec.(map[string]any)
	if !ok {
		return false, notFound
	}
	found, changed := false, false
	for _, field := range containerFields {
		list, _ := podSpec[field].([]any)
		for _, item := range list {
			c, ok := item.(map[string]any)
			if !ok || c["name"] != container {
				continue
			}
			found = true
			if c["image"] != image {
				c["image"] = image
				changed = true
			}
		}
	}
	if !found {
		return false, notFound
	}
	return changed, nil
}

// Images lists the images of the containers and init containers of u by
// container name; it is empty for objects without a pod template.
func Images(u *unstructured.Unstructured) map[string]string {
	images := map[string]string{}
	path := podSpecPath(u.GetAPIVersion(), u.GetKind())
	for _, field := range containerFields {
		list, _, _ := unstructured.NestedFieldNoCopy(u.Object, append(path, field)...)
		items, _ := list.([]any)
		for _, item := range items {
			c, _ := item.(map[string]any)
			name, _ := c["name"].(string)
			image, _ := c["image"].(string)
			if name != "" {
				images[name] = image
			}
		}
	}
	return images
}

// PodSpec is the pod spec of u (see podSpecPath), nil for objects without one.
func PodSpec(u *unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(u.Object, podSpecPath(u.GetAPIVersion(), u.GetKind())...)
	return spec
}
