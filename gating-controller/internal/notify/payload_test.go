package notify

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// goldenEvent is the close request of testdata/*.json.
func goldenEvent() Event {
	until := time.Date(2021, 3, 26, 12, 0, 0, 0, time.UTC)
	return Event{
		Gate: "production", Namespace: "flux-system", Event: "Closed", State: "closed", PreviousState: "opened",
		Reason:  "release freeze <@here> & co",
		Message: "Gate scheduled for opening at 2021-03-26T12:00:00Z (request, requested by alice: release freeze <@here> & co)",
		Cause:   "request", RequestedBy: "alice", Until: &until, Time: time.Date(2021, 3, 26, 10, 0, 0, 0, time.UTC),
		URL:    DashboardLink("https://gates.example.com/ui/", "flux-system", "production"),
		Labels: map[string]string{"not": "sent"}, NotificationRefs: []string{"not-sent"},
	}
}

// The bodies of each type, against the golden files of testdata (each names the documentation
// of its format in its "_comment", which the comparison leaves out).
func TestBodiesAreTheDocumentedShapes(t *testing.T) {
	for typ, file := range map[string]string{
		TypeGeneric: "generic.json", TypeGenericHMAC: "generic.json", TypeSlack: "slack.json", TypeMSTeams: "msteams.json",
	} {
		body, err := Body(typ, goldenEvent())
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		var want, got map[string]any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if _, ok := want["_comment"]; !ok {
			t.Errorf("%s has no _comment naming the documentation of its format", file)
		}
		delete(want, "_comment")
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		w, _ := json.MarshalIndent(want, "", "  ")
		g, _ := json.MarshalIndent(got, "", "  ")
		if string(w) != string(g) {
			t.Errorf("%s body differs from testdata/%s:\n%s", typ, file, g)
		}
	}
}

func TestDashboardLink(t *testing.T) {
	if got := DashboardLink("", "ns", "g"); got != "" {
		t.Errorf("no base, no link: %q", got)
	}
	if got := DashboardLink("http://ui:8080", "ns", "g"); got != "http://ui:8080/#ns/g" {
		t.Errorf("got %q", got)
	}
}
