package builder

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestBuildDeadline: a build stops soon after its context is done, with an error that wraps
// the context's; text/template cannot be interrupted, so the build looks at the context between
// inputs and entries, in functions, at loops and at every write. Each template here runs for
// seconds when nothing stops it.
func TestBuildDeadline(t *testing.T) {
	cases := []struct{ name, template string }{
		// Nine million loop iterations, within MaxIterations, each calling a function.
		{"functions in a loop", `<< range until 3000 >><< range until 3000 >><< $x := add 1 2 >><< end >><< end >>`},
		// Nine million writes, and no function called once the loop started.
		{"writes in a loop", `<< range 9000000 >>x<< end >>`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			_, err := renderText(ctx, t, tc.template)
			g.Expect(err).To(MatchError(ContainSubstring("build interrupted: context deadline exceeded")))
			g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue())
		})
	}

	t.Run("cancelled before the build", func(t *testing.T) {
		g := NewWithT(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		tmpl, err := Parse(resourcesOf(t, "- {apiVersion: v1, kind: Namespace, metadata: {name: a}}"), "")
		g.Expect(err).NotTo(HaveOccurred())
		objects, err := tmpl.Build(ctx, []Input{{}}, nil)
		g.Expect(err).To(MatchError("inputs[0]: resources[0]: build interrupted: context canceled"))
		g.Expect(errors.Is(err, context.Canceled)).To(BeTrue())
		g.Expect(objects).To(BeNil())
	})
}
