package sessionpod

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Sweep deletes the session pods of every namespace that this controller did not start: those
// a controller that died (or lost its leadership) left behind. Such a pod has ended or ends
// soon (its standard input closed with the exec, its deadline bounds it), but it would stay
// listed. It runs once, when the controller becomes the leader (a manager Runnable).
func (d *Dialer) Sweep(ctx context.Context) error {
	list, err := d.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{SessionLabel: "true"}).String(),
	})
	if err != nil {
		return fmt.Errorf("listing the session pods left behind: %w", err)
	}
	for _, p := range list.Items {
		if _, mine := d.live.Load(p.Namespace + "/" + p.Name); mine {
			continue
		}
		if err := deleteNow(ctx, d.Client.CoreV1().Pods(p.Namespace), p.Name); err != nil {
			return fmt.Errorf("deleting the session pod %s/%s left behind: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}
