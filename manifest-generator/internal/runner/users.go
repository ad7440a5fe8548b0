package runner

import (
	"fmt"
	"strconv"
	"strings"
)

// Users is a range of user ids, one per session at a time (`--job-users=100000-100999`): each
// session's commands then run as a user of their own, so that a command cannot read, change or
// signal what another session's commands do at the same time. The runner needs the rights to
// switch users for it (root, or CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_FOWNER and CAP_KILL).
type Users struct {
	First, Last int
}

// ParseUsers parses "FIRST-LAST" (a single id is a range of one).
func ParseUsers(s string) (Users, error) {
	first, last, found := strings.Cut(s, "-")
	var u Users
	var err error
	if u.First, err = strconv.Atoi(strings.TrimSpace(first)); err != nil {
		return Users{}, fmt.Errorf("job users %q: want FIRST-LAST, e.g. 100000-100999", s)
	}
	u.Last = u.First
	if found {
		if u.Last, err = strconv.Atoi(strings.TrimSpace(last)); err != nil {
			return Users{}, fmt.Errorf("job users %q: want FIRST-LAST, e.g. 100000-100999", s)
		}
	}
	if u.First <= 0 || u.Last < u.First {
		return Users{}, fmt.Errorf("job users %q: want 0 < FIRST <= LAST", s)
	}
	return u, nil
}

func (u Users) String() string { return fmt.Sprintf("%d-%d", u.First, u.Last) }

// userPool hands out the users of a range, each to one session at a time.
type userPool struct{ free chan int }

func newUserPool(u Users) *userPool {
	p := &userPool{free: make(chan int, u.Last-u.First+1)}
	for id := u.First; id <= u.Last; id++ {
		p.free <- id
	}
	return p
}

// acquire waits for a free user.
func (p *userPool) acquire() int { return <-p.free }

// release gives a user back, once nothing of its session runs any more.
func (p *userPool) release(id int) { p.free <- id }
