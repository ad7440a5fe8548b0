package status

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Gone reports whether a patch failed only because the object no longer exists: every error of
// it (the patch helper aggregates one per request) is NotFound. A deleted object whose finalizer
// was just removed is gone before its status can be written, which is no error.
func Gone(err error) bool {
	return err != nil && kerrors.FilterOut(err, apierrors.IsNotFound) == nil
}
