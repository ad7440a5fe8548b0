package fluxyaml

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"sigs.k8s.io/yaml"
)

// printed is an Executor whose every command prints out, as a generator would.
type printed []byte

func (p printed) Run(context.Context, Command, string, map[string]string) ([]byte, error) {
	return p, nil
}

// ordinaryObject is the i-th object of an ordinary output: a Deployment, a Service and a
// ConfigMap in turn, the shapes kustomize and helm print most.
func ordinaryObject(i int) string {
	switch i % 3 {
	case 0:
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%[1]d
  namespace: apps
  labels:
    app.kubernetes.io/name: app-%[1]d
    app.kubernetes.io/part-of: shop
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: app-%[1]d
  template:
    metadata:
      labels:
        app.kubernetes.io/name: app-%[1]d
    spec:
      containers:
        - name: app
          image: ghcr.io/example/app-%[1]d:1.4.2
          ports:
            - containerPort: 8080
              name: http
          env:
            - name: LOG_LEVEL
              value: info
          resources:
            requests:
              cpu: 100m
              memory: 64Mi
            limits:
              memory: 128Mi
          readinessProbe:
            httpGet:
              path: /readyz
              port: http
`, i)
	case 1:
		return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: app-%[1]d
  namespace: apps
spec:
  selector:
    app.kubernetes.io/name: app-%[1]d
  ports:
    - name: http
      port: 80
      targetPort: http
`, i)
	default:
		return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app-%[1]d-config
  namespace: apps
data:
  settings.yaml: |
    listen: :8080
    upstream: http://app-%[1]d.apps.svc
    timeout: 30s
  feature-flags: "a,b,c"
`, i)
	}
}

// ordinaryOutput is the output of a generator printing n ordinary objects, as a YAML stream
// or, with asJSON, as a stream of JSON objects.
func ordinaryOutput(tb testing.TB, n int, asJSON bool) []byte {
	tb.Helper()
	var b bytes.Buffer
	for i := range n {
		doc := ordinaryObject(i)
		if !asJSON {
			b.WriteString("---\n")
			b.WriteString(doc)
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			tb.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, js); err != nil {
			tb.Fatal(err)
		}
		b.Write(compact.Bytes())
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func benchmarkDecode(b *testing.B, asJSON bool) {
	out := ordinaryOutput(b, 1000, asJSON)
	cfg := commandConfig("generate")
	root := b.TempDir()
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		objs, err := GenerateObjects(context.Background(), printed(out), root, ".", ".flux.yaml", cfg, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if len(objs) != 1000 {
			b.Fatalf("%d objects, want 1000", len(objs))
		}
	}
}

// BenchmarkDecodeOrdinaryOutput decodes the output of a generator printing 1,000 ordinary
// objects as YAML, the common case the limits of decode.go must not slow down.
func BenchmarkDecodeOrdinaryOutput(b *testing.B) { benchmarkDecode(b, false) }

// BenchmarkDecodeOrdinaryOutputJSON is the same output as a stream of JSON objects.
func BenchmarkDecodeOrdinaryOutputJSON(b *testing.B) { benchmarkDecode(b, true) }
