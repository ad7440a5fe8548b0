package inputs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
)

// DefaultMaxResponseBytes caps the body of an ExternalService response when no cap is given.
const DefaultMaxResponseBytes int64 = 1 << 20

// Auth holds the credentials of an ExternalService request, from the provider's secretRef: a
// bearer Token, or Username and Password for basic auth. Token wins when both are set.
type Auth struct {
	Username, Password, Token string
}

// ExternalService exports the inputs an HTTP service returns for a GET of url: a JSON body
// `{"inputs": [{"id": "...", ...}, ...]}` where every input is an object with a non-empty string
// id, unique within the response. A body over maxBytes (DefaultMaxResponseBytes when not
// positive) is refused rather than truncated. client is built by HTTPClient; nil means
// HTTPClient(nil, false, 0, &AddressPolicy{}): HTTPS only, to the addresses an AddressPolicy
// allows by default, bounded by ctx alone.
//
// Errors name the status, the input index, or what kind of failure it was, never the
// credentials nor anything the service sent (fetchError): the URL is a tenant's, the answer may
// come from a service the tenant could not read otherwise.
func ExternalService(ctx context.Context, url string, client *http.Client, auth Auth, maxBytes int64) ([]map[string]any, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxResponseBytes
	}
	if client == nil {
		client = HTTPClient(nil, false, 0, &AddressPolicy{})
	}
	u, err := neturl.Parse(url)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, &InvalidURLError{URL: redact(url), Reason: "it must be an http(s):// address"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &InvalidURLError{URL: redact(url), Reason: err.Error()}
	}
	req.Header.Set("Accept", "application/json")
	switch {
	case auth.Token != "":
		req.Header.Set("Authorization", "Bearer "+auth.Token)
	case auth.Username != "" || auth.Password != "":
		req.SetBasicAuth(auth.Username, auth.Password)
	}

	resp, err := client.Do(req)
	if err != nil {
		return nil, fetchError(u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Drain a little so the connection can be reused; the body is not quoted, as a service
		// may echo the request's headers back.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("GET %s: %s", u.Redacted(), resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, fetchError(u, fmt.Errorf("reading the response: %w", err))
	}
	if int64(len(body)) > maxBytes {
		return nil, fmt.Errorf("GET %s: response larger than %d bytes", u.Redacted(), maxBytes)
	}
	inputs, err := parseServiceResponse(body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	return inputs, nil
}

// parseServiceResponse checks and decodes `{"inputs": [...]}`.
func parseServiceResponse(body []byte) ([]map[string]any, error) {
	var doc struct {
		Inputs *[]json.RawMessage `json:"inputs"`
	}
	// The decoders' errors are not quoted: they show bytes of the response.
	dec := json.NewDecoder(bytes.NewReader(body))
	if dec.Decode(&doc) != nil {
		return nil, errors.New(`the response is not a JSON object {"inputs": [...]}`)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON response")
	}
	if doc.Inputs == nil {
		return nil, errors.New(`the response has no "inputs" list`)
	}

	out := make([]map[string]any, 0, len(*doc.Inputs))
	seen := make(map[string]int, len(*doc.Inputs))
	for i, raw := range *doc.Inputs {
		v, err := decodeJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("input %d holds a number out of range", i)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("input %d is not a JSON object", i)
		}
		id, ok := m[IDKey].(string)
		if !ok || id == "" {
			return nil, fmt.Errorf("input %d has no %q: every input needs a non-empty string id", i, IDKey)
		}
		if j, dup := seen[id]; dup {
			return nil, fmt.Errorf("inputs %d and %d have the same id: ids must be unique", j, i)
		}
		seen[id] = i
		out = append(out, m)
	}
	return out, nil
}

// redact drops the password of a URL for messages; a URL that does not parse is not shown.
func redact(url string) string {
	u, err := neturl.Parse(url)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
