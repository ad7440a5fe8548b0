package index

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Helm accepts an index in JSON form too (it decodes valid JSON with encoding/json). Its
// tokenizer streams, so the JSON path holds one chart's entries at a time, like the YAML path.
//
// Offsets in messages are byte offsets just after the offending token (json.Decoder counts
// the separators before a token as read only with it), or of the offending value inside an
// entry.

func (c *converter) convertJSON(br *bufio.Reader) error {
	dec := json.NewDecoder(br)
	if err := expectDelim(dec, '{', "the index must be an object"); err != nil {
		return err
	}
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return err
		}
		off := dec.InputOffset()
		// encoding/json keeps the last of duplicate keys; rejecting them is safer, and what
		// the YAML path does.
		if c.topKeys[key] {
			return fmt.Errorf("%w: offset %d: %s is defined twice", ErrInvalidIndex, off, key)
		}
		c.topKeys[key] = true
		switch key {
		case "apiVersion":
			var v any
			if err := dec.Decode(&v); err != nil {
				return jsonError(err, 0)
			}
			switch v := v.(type) {
			case nil:
			case string:
				c.apiVersion = v
			default:
				return fmt.Errorf("%w: offset %d: apiVersion must be a string", ErrInvalidIndex, off)
			}
		case "entries":
			if err := c.jsonEntries(dec); err != nil {
				return err
			}
		default:
			// Other keys are not needed; RawMessage skips them holding only that value.
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return jsonError(err, 0)
			}
		}
	}
	if err := expectDelim(dec, '}', "the index must be an object"); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return fmt.Errorf("%w: offset %d: data after the index object", ErrInvalidIndex, dec.InputOffset())
		}
		return jsonError(err, 0)
	}
	return nil
}

func (c *converter) jsonEntries(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return jsonError(err, 0)
	}
	off := dec.InputOffset()
	if tok == nil {
		c.entries = entriesNull
		return nil
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("%w: offset %d: entries must map chart names to lists of versions", ErrInvalidIndex, off)
	}
	c.entries = entriesPresent
	for dec.More() {
		name, err := stringToken(dec)
		if err != nil {
			return err
		}
		off := dec.InputOffset()
		if err := c.markChart(name, "offset", int(off)); err != nil {
			return err
		}
		tok, err := dec.Token()
		if err != nil {
			return jsonError(err, 0)
		}
		var entries []*rawEntry
		switch tok {
		case nil:
		case json.Delim('['):
			for dec.More() {
				// Decoding through RawMessage gives the entry's own offset, which makes the
				// offsets of type errors (relative to the value) absolute.
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return fmt.Errorf("chart %q: %w", name, jsonError(err, 0))
				}
				start := dec.InputOffset() - int64(len(raw))
				var e *rawEntry
				if err := json.Unmarshal(raw, &e); err != nil {
					return fmt.Errorf("chart %q: %w", name, jsonError(err, start))
				}
				if e != nil {
					e.where = fmt.Sprintf("offset %d", start)
				}
				entries = append(entries, e)
			}
			if err := expectDelim(dec, ']', "a chart's versions must be a list"); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: offset %d: chart %q: expected a list of versions", ErrInvalidIndex, off, name)
		}
		if err := c.addChart(name, entries); err != nil {
			return err
		}
	}
	return expectDelim(dec, '}', "entries must be an object")
}

func expectDelim(dec *json.Decoder, d json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return jsonError(err, 0)
	}
	if tok != d {
		return fmt.Errorf("%w: offset %d: %s", ErrInvalidIndex, dec.InputOffset(), what)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", jsonError(err, 0)
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("%w: offset %d: expected a key", ErrInvalidIndex, dec.InputOffset())
	}
	return s, nil
}

// jsonError wraps an encoding/json error as ErrInvalidIndex with its byte offset. Errors of
// the underlying reader are sorted out by Convert, which knows them. base is the offset of the value err is about, for errors of json.Unmarshal.
func jsonError(err error, base int64) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%w: JSON offset %d: %v", ErrInvalidIndex, base+se.Offset, err)
	case errors.As(err, &te):
		return fmt.Errorf("%w: JSON offset %d: %s must be %s, found %s", ErrInvalidIndex, base+te.Offset, te.Field, te.Type, te.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: JSON ends early", ErrInvalidIndex)
	}
	return fmt.Errorf("%w: %v", ErrInvalidIndex, err)
}
