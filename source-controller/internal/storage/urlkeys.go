package storage

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// MinURLKeySize is the shortest key accepted for signing artifact URLs: 32 bytes, what
// `head -c 32 /dev/urandom | base64` gives as 44 characters.
const MinURLKeySize = 32

// GeneratedURLKeyFile is the file, in the storage root, that keeps the key generated when no
// --artifact-url-keys-file is given. It starts with a dot, so the server never serves it, and it
// lies outside every object directory, so garbage collection never deletes it.
const GeneratedURLKeyFile = ".artifact-url-key"

// ReadURLKeys reads a file of URL keys (--artifact-url-keys-file): one key per line, the first
// signs and all verify; blank lines and lines starting with '#' are skipped, and surrounding
// spaces are not part of a key. A key is the bytes of its line, at least MinURLKeySize of them.
func ReadURLKeys(file string) ([][]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the artifact URL keys: %w", err)
	}
	keys, err := parseURLKeys(data)
	if err != nil {
		return nil, fmt.Errorf("artifact URL keys '%s': %w", file, err)
	}
	return keys, nil
}

func parseURLKeys(data []byte) ([][]byte, error) {
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		// The message names the line, never the key.
		if len(line) < MinURLKeySize {
			return nil, fmt.Errorf("the key of line %d is shorter than %d bytes", n, MinURLKeySize)
		}
		keys = append(keys, bytes.Clone(line))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, errors.New("no key")
	}
	return keys, nil
}

// generatedURLKeys returns the keys of GeneratedURLKeyFile in base, writing a new random key
// first when the file does not exist.
func generatedURLKeys(base string) ([][]byte, error) {
	file := filepath.Join(base, GeneratedURLKeyFile)
	if keys, err := ReadURLKeys(file); !errors.Is(err, fs.ErrNotExist) {
		return keys, err
	}
	raw := make([]byte, MinURLKeySize)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	if err := createOnce(file, base64.RawURLEncoding.EncodeToString(raw)+"\n"); err != nil {
		return nil, fmt.Errorf("writing the artifact URL key: %w", err)
	}
	return ReadURLKeys(file)
}

// createOnce writes content to file, mode 0600, unless file exists. The file appears whole or
// not at all (written aside, then linked into place; link(2) never replaces), so replicas
// starting together on one volume all keep the first key written.
func createOnce(file, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+tmpInfix+"*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(content)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), file); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
