package builder

import (
	"reflect"
	"testing"
)

// FuzzDecodeValue decodes the fuzzed output of a typed template string. decodeValue always
// gives exactly what the YAML decoder gives: the fast path of decodeSimple accepts only
// strings it reads the same way, and every value is of a type unstructured objects hold.
func FuzzDecodeValue(f *testing.F) {
	for _, s := range []string{
		"", "true", "false", "True", "FALSE", "yes", "Yes", "YES", "no", "No", "y", "Y", "n", "N",
		"on", "On", "ON", "off", "Off", "null", "Null", "NULL", "~", "nil",
		"0", "-0", "7", "-7", "42", "007", "0x1F", "0o17", "1_000", "+1", "1e3", "1.5", "-", "--1",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
		"team1", "Team-One", "a/b.c_d", "podinfo-team1", "e5", "inf", ".inf", ".nan", "NaN", "Infinity",
		"6.7.x", "a:b", "a: b", "a #b", "a b", "[a]", "{a: b}", "*", "&a", "!tag", "%x", "@x", "`x`",
		`"6.7.x"`, `""`, `"a b"`, `" padded "`, `"a\"b"`, `"tab\there"`, `"é"`, `"x`, `"`, `'x'`,
		"2024-01-01", "12:30", "1:20:30", "<<", "---", "...", "a\nb", " team1", "team1 ", "- a\n- b", "a: [1, 2.0, 3e300]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1024 {
			return
		}
		got, err := decodeValue(s)
		want, yamlErr := decodeYAML([]byte(s))
		if (err != nil) != (yamlErr != nil) {
			t.Fatalf("%q: decodeValue error %v, YAML error %v", s, err, yamlErr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decodeValue gives %#v, YAML %#v", s, got, want)
		}
		checkJSONTypes(t, s, got)
	})
}

// checkJSONTypes fails when v holds a type unstructured objects cannot hold.
func checkJSONTypes(t *testing.T, s string, v any) {
	t.Helper()
	switch v := v.(type) {
	case nil, string, bool, int64, float64:
	case map[string]any:
		for _, e := range v {
			checkJSONTypes(t, s, e)
		}
	case []any:
		for _, e := range v {
			checkJSONTypes(t, s, e)
		}
	default:
		t.Fatalf("%q decodes to a %T", s, v)
	}
}
