package testenv

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestNamespacePrefix(t *testing.T) {
	for name, want := range map[string]string{
		"TestGateOpens":                 "testgateopens-",
		"TestUpdate/raw_YAML/two_files": "testupdate-raw-yaml-two-files-",
		"TestX/__weird--chars__":        "testx-weird-chars-",
		"":                              "test-",
		"TestAVeryLongNameThatGoesOnAndOnAndOnForever/with/subtests": "testaverylongnamethatgoesonandonandonfor-",
	} {
		g := NewWithT(t)
		got := namespacePrefix(name)
		g.Expect(got).To(Equal(want), name)
		g.Expect(len(got)).To(BeNumerically("<=", maxNamespacePrefix+1))
	}
}
