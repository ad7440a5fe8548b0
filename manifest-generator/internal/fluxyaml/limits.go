package fluxyaml

import "fmt"

// The defaults of the controller's limits: room for large repositories (a generation of 20,000
// objects is far beyond what one target path of Flux users holds) while keeping one generation's
// decoded objects well inside the controller's memory.
const (
	DefaultMaxGenerators             = 20
	DefaultMaxGenerationOutput int64 = 128 << 20
	DefaultMaxObjects                = 20_000
	// DefaultMaxOutputNodes is 2,000,000 nodes, room for 10,000 ordinary objects of 20 to 150
	// nodes (a Deployment of one container with ports, env, resources and a probe is 41, a
	// Service 13) or 500 large CRDs. Decoded, a node of ordinary objects takes about 160 bytes
	// (320 MB at the limit, measured with the objects of BenchmarkDecodeOrdinaryOutput); the
	// densest YAML, nested mappings of one key, about 300 (600 MB).
	DefaultMaxOutputNodes int64 = 2_000_000
)

// Limits bound what the generators of one target path produce together, so that one
// repository cannot take the controller's memory: each command's output is capped by
// the runner's MaxOutput, but three generators at the cap gave 1.8 M objects. Zero fields are no limit.
type Limits struct {
	// MaxGenerators is the number of generators a config may list.
	MaxGenerators int
	// MaxOutput is the total standard output of the generators, in bytes.
	MaxOutput int64
	// MaxObjects is the number of objects the target path may produce.
	MaxObjects int
	// MaxOutputNodes is the number of YAML nodes (mappings, sequences and scalars) of the
	// objects the target path may produce: what their decoded form takes in memory, which
	// the number of objects does not bound. Each document is decoded, counted and checked in
	// turn, so a stream over the limit is refused with at most one document decoded past it.
	MaxOutputNodes int64
	// Names are the settings that set the limits, named in errors (e.g. the controller's flags);
	// see LimitError.
	Names LimitNames
}

// LimitNames name the setting behind each limit, so that an error says what to raise.
type LimitNames struct {
	Generators, Output, Objects, Nodes string
}

// LimitError says which limit a target path went over, and by how much.
type LimitError struct {
	ConfigFile string
	// What is "generators", "bytes of output", "objects" or "nodes".
	What string
	// Value is what was counted when the limit was hit (a lower bound for output and objects:
	// generation stops at the first generator that goes over).
	Value int64
	Limit int64
	// Setting names what sets the limit, when known.
	Setting string
}

func (e *LimitError) Error() string {
	var msg string
	switch e.What {
	case "generators":
		msg = fmt.Sprintf("%s lists %d generators, over the limit of %d", e.ConfigFile, e.Value, e.Limit)
	case "objects":
		msg = fmt.Sprintf("%s gives %d objects, over the limit of %d", e.ConfigFile, e.Value, e.Limit)
	case "nodes":
		msg = fmt.Sprintf("%s gives at least %d YAML nodes (mappings, sequences and scalars), over the limit of %d", e.ConfigFile, e.Value, e.Limit)
	default:
		msg = fmt.Sprintf("the generators of %s printed %d %s, over the limit of %d", e.ConfigFile, e.Value, e.What, e.Limit)
	}
	if e.Setting != "" {
		msg += " (" + e.Setting + ")"
	}
	return msg
}

func (l Limits) checkGenerators(configFile string, n int) error {
	if l.MaxGenerators > 0 && n > l.MaxGenerators {
		return &LimitError{ConfigFile: configFile, What: "generators", Value: int64(n), Limit: int64(l.MaxGenerators), Setting: l.Names.Generators}
	}
	return nil
}

func (l Limits) checkOutput(configFile string, n int64) error {
	if l.MaxOutput > 0 && n > l.MaxOutput {
		return &LimitError{ConfigFile: configFile, What: "bytes of output", Value: n, Limit: l.MaxOutput, Setting: l.Names.Output}
	}
	return nil
}

// CheckObjects returns a *LimitError when n objects are over the limit; source names where they
// come from (the config file, or the target path in raw mode).
func (l Limits) CheckObjects(source string, n int) error {
	configFile := source
	if l.MaxObjects > 0 && n > l.MaxObjects {
		return &LimitError{ConfigFile: configFile, What: "objects", Value: int64(n), Limit: int64(l.MaxObjects), Setting: l.Names.Objects}
	}
	return nil
}
