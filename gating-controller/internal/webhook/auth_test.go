package webhook

import "testing"

// The HMAC checks against GitHub's published example (secret "It's a Secret to Everybody", body
// "Hello, World!"), with each algorithm a header may name, and what they refuse.
func TestValidPrefixedHMAC(t *testing.T) {
	key, body := []byte("It's a Secret to Everybody"), []byte("Hello, World!")
	const github = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	for _, tc := range []struct {
		header  string
		allowed []string
		key     []byte
		want    bool
	}{
		{github, []string{"sha256"}, key, true},
		{" " + github + " ", []string{"sha256"}, key, true},
		{github, []string{"sha1"}, key, false},
		{github, []string{"sha256"}, []byte("another secret"), false},
		{github, []string{"sha256"}, nil, false},
		{"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e1", []string{"sha256"}, key, false},
		{"sha256=not-hex", []string{"sha256"}, key, false},
		{"757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", []string{"sha256"}, key, false},
		{"md5=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", []string{"md5", "sha256"}, key, false},
		{"", []string{"sha256"}, key, false},
	} {
		if got := ValidPrefixedHMAC(tc.header, body, tc.key, tc.allowed...); got != tc.want {
			t.Errorf("ValidPrefixedHMAC(%q, %v, key %q) = %v, want %v", tc.header, tc.allowed, tc.key, got, tc.want)
		}
	}
}

func TestEqualToken(t *testing.T) {
	for _, tc := range []struct {
		given, token string
		want         bool
	}{
		{"s3cr3t", "s3cr3t", true},
		{"s3cr3t ", "s3cr3t", false},
		{"s3cr3", "s3cr3t", false},
		{"", "", false},
		{"x", "", false},
	} {
		if got := EqualToken([]byte(tc.given), []byte(tc.token)); got != tc.want {
			t.Errorf("EqualToken(%q, %q) = %v, want %v", tc.given, tc.token, got, tc.want)
		}
	}
}
