package controller

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// recreateFailedJobs deletes, as the ResourceSet's account, the generated Jobs annotated
// recreateOnFailure whose live Job has failed, so that the apply that follows creates them
// again (a Job's template cannot change, and a failed Job never runs again). It does so whatever
// the Job's prune annotation says, as flux-operator.
func (r *ResourceSetReconciler) recreateFailedJobs(ctx context.Context, obj *rsv1.ResourceSet, objects []*unstructured.Unstructured) error {
	var jobs []*unstructured.Unstructured
	for _, o := range objects {
		if o.GetAPIVersion() == "batch/v1" && o.GetKind() == "Job" && o.GetAnnotations()[rsv1.RecreateOnFailureAnnotation] == rsv1.EnabledValue {
			jobs = append(jobs, o)
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	cl, err := r.owners().ClientFor(ctx, obj)
	if err != nil {
		return err
	}
	for _, o := range jobs {
		ns := o.GetNamespace()
		if ns == "" {
			ns = obj.Namespace
		}
		live := &batchv1.Job{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.GetName()}, live); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("reading Job '%s/%s': %w", ns, o.GetName(), err)
			}
			continue
		}
		if !jobFailed(live) {
			continue
		}
		background := metav1.DeletePropagationBackground
		if err := cl.Delete(ctx, live, &client.DeleteOptions{PropagationPolicy: &background}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the failed Job '%s/%s': %w", ns, o.GetName(), err)
		}
		r.EventRecorder.Eventf(obj, corev1.EventTypeNormal, "JobRecreated",
			"Job/%s/%s failed: deleted to be created again (%s)", ns, o.GetName(), rsv1.RecreateOnFailureAnnotation)
	}
	return nil
}

func jobFailed(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
