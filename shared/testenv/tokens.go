package testenv

import (
	"encoding/csv"
	"os"
	"strings"
)

// writeTokenFile writes tokens in the CSV of kube-apiserver's --token-auth-file (token, user,
// uid, then the groups as one comma-separated field) to a new file, and returns its path.
func writeTokenFile(tokens []StaticToken) (string, error) {
	f, err := os.CreateTemp("", "static-tokens-*.csv")
	if err != nil {
		return "", err
	}
	w := csv.NewWriter(f)
	for _, t := range tokens {
		uid := t.UID
		if uid == "" {
			uid = t.User
		}
		_ = w.Write([]string{t.Token, t.User, uid, strings.Join(t.Groups, ",")})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}
