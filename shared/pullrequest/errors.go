package pullrequest

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"
)

// action is the kind of request an error is about, which decides what its status means.
type action int

const (
	// reading is listing or getting pull requests.
	reading action = iota
	// writing is opening or updating a pull request, or adding labels.
	writing
)

// APIError is a forge's refusal of a request: its HTTP status, the forge's short message and
// what the user can do about it. Its text never holds the token nor the forge's whole answer.
type APIError struct {
	// Op is what was being done, e.g. `opening a pull request from "a" into "main" of <repo>`.
	Op string
	// Provider is the forge that answered.
	Provider Provider
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Message is the forge's own message ("message" of its JSON answer), cleaned and cut to 200
	// characters; empty when it gave none.
	Message string
	hint    string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s answered HTTP %d %s", e.Op, e.Provider.name(), e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		fmt.Fprintf(&b, " (%q)", e.Message)
	}
	if e.hint != "" {
		b.WriteString(": ")
		b.WriteString(e.hint)
	}
	return b.String()
}

// apiError builds the APIError of an answer with status, its message cleaned of the token.
func apiError(p Provider, op string, act action, status int, message, token string) *APIError {
	return &APIError{Op: op, Provider: p, StatusCode: status, Message: cleanMessage(message, token), hint: hint(p, act, status)}
}

// hint says what an unsuccessful status usually means, and what to do.
func hint(p Provider, act action, status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "the token is wrong, expired or revoked: replace it"
	case http.StatusForbidden:
		if act == reading {
			return "the token cannot read the pull requests of the repository: give it read access to them, or wait if the forge limits the requests"
		}
		switch p {
		case GitHub:
			return `the token cannot open or update pull requests of the repository: give it "Pull requests: Read and write" (a fine-grained token or a GitHub App) or the repo scope (a classic token), or wait if GitHub limits the requests`
		case GitLab:
			return "the token cannot open or update merge requests of the project: it needs the api scope and at least the Developer role"
		}
		return "the token cannot open or update pull requests of the repository: it needs the write:repository scope, and its user write access to the repository"
	case http.StatusNotFound:
		if act == reading {
			return "check the repository URL (and the API URL), that the pull request exists, and that the token can read the repository"
		}
		return "check the repository URL (and the API URL), that both branches exist, and that the token can read the repository"
	case http.StatusConflict, http.StatusUnprocessableEntity:
		return "the forge refused the pull request: check that the head branch has commits the base branch lacks, and that no other pull request between the two branches is open"
	case http.StatusTooManyRequests:
		return "the forge limits the requests: retry later"
	}
	if status >= 500 {
		return "the forge failed: retry later"
	}
	return ""
}

// maxMessage is the length a forge's message is cut to.
const maxMessage = 200

// cleanMessage makes a forge's message fit for an error: one line of printable characters, at
// most maxMessage of them, without the token.
func cleanMessage(msg, token string) string {
	if token != "" {
		msg = strings.ReplaceAll(msg, token, "[token]")
	}
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			return ' '
		}
		return r
	}, msg)
	msg = strings.Join(strings.Fields(msg), " ")
	if r := []rune(msg); len(r) > maxMessage {
		msg = string(r[:maxMessage]) + "…"
	}
	return msg
}
