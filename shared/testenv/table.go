package testenv

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Columns is the row `kubectl get` prints for one object: the API server's table form of it,
// built from the CRD's printer columns, as column name → cell.
func (e *Env) Columns(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (map[string]string, error) {
	cfg := rest.CopyConfig(e.Config)
	cfg.GroupVersion = &schema.GroupVersion{Group: gvr.Group, Version: gvr.Version}
	cfg.APIPath = "/apis"
	if gvr.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := rc.Get().Namespace(namespace).Resource(gvr.Resource).Name(name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(raw, table); err != nil {
		return nil, err
	}
	if len(table.Rows) != 1 {
		return nil, fmt.Errorf("the table of %s %s/%s has %d rows", gvr.Resource, namespace, name, len(table.Rows))
	}
	cols := make(map[string]string, len(table.ColumnDefinitions))
	for i, c := range table.ColumnDefinitions {
		if i < len(table.Rows[0].Cells) {
			cols[c.Name] = fmt.Sprint(table.Rows[0].Cells[i])
		}
	}
	return cols, nil
}
