package sessionpod

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// SweepPeriod is how often Sweep looks again, with shards.
const SweepPeriod = time.Minute

// Sweep deletes the session pods of every namespace that this controller did not start: those
// a controller that died (or lost its leadership) left behind. Such a pod has ended or ends
// soon (its standard input closed with the exec, its deadline bounds it), but it would stay
// listed. It runs once, when the controller becomes the leader (a manager Runnable); with
// shards (Members), every SweepPeriod, and it spares the pods of the live replicas.
func (d *Dialer) Sweep(ctx context.Context) error {
	for {
		if err := d.sweep(ctx); err != nil || d.Members == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(SweepPeriod):
		}
	}
}

func (d *Dialer) sweep(ctx context.Context) error {
	var members []string
	if d.Members != nil {
		var settled bool
		if members, settled = d.Members(); !settled {
			return nil
		}
	}
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
		if r := p.Labels[ReplicaLabel]; r != "" && r != labelValue(d.Replica) && slices.ContainsFunc(members, func(m string) bool { return labelValue(m) == r }) {
			continue
		}
		if err := deleteNow(ctx, d.Client.CoreV1().Pods(p.Namespace), p.Name); err != nil {
			return fmt.Errorf("deleting the session pod %s/%s left behind: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}
