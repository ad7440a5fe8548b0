package storage

import (
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ReleaseUnowned removes from this replica's disk the artifacts of the objects that keep says
// it no longer keeps (by "namespace/name", the key of every kind), and returns their
// directories: with --sharding, a replica stops serving, and collects, what moved to another.
// The shared store's copies stay (their owner collects them), and the other replicas serve
// them from it. Temporary files and unknown entries are left alone.
func (s *Storage) ReleaseUnowned(keep func(key string) bool) ([]string, error) {
	var released []string
	kinds, err := os.ReadDir(s.BasePath)
	if err != nil {
		return nil, err
	}
	for _, kind := range kinds {
		if !kind.IsDir() || strings.HasPrefix(kind.Name(), ".") {
			continue
		}
		namespaces, err := os.ReadDir(filepath.Join(s.BasePath, kind.Name()))
		if err != nil {
			return released, err
		}
		for _, ns := range namespaces {
			if !ns.IsDir() {
				continue
			}
			names, err := os.ReadDir(filepath.Join(s.BasePath, kind.Name(), ns.Name()))
			if err != nil {
				return released, err
			}
			for _, name := range names {
				if !name.IsDir() || keep(ns.Name()+"/"+name.Name()) {
					continue
				}
				if err := os.RemoveAll(filepath.Join(s.BasePath, kind.Name(), ns.Name(), name.Name())); err != nil {
					return released, err
				}
				released = append(released, path.Join(kind.Name(), ns.Name(), name.Name()))
			}
		}
	}
	return released, nil
}
