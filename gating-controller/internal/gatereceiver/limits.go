package gatereceiver

import (
	"time"

	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// DefaultMaxDuration is the longest `for` a request may ask for unless --receiver-max-duration
// says otherwise: a week, so that a forgotten pipeline cannot hold a gate open for months.
const DefaultMaxDuration = 7 * 24 * time.Hour

// Limits bound what a caller can make the receiver do.
type Limits struct {
	// Window is how far a request's timestamp may be from the receiver's clock, either way, and
	// how long an accepted request is remembered to refuse its replay (default 5m).
	Window time.Duration
	// RateInterval is how often a gate accepts one more request once its burst is spent
	// (default 6s); Burst is how many requests it accepts at once (default 10). Only
	// authenticated requests count: a caller without the token cannot spend a gate's budget.
	RateInterval time.Duration
	Burst        int
	// FailureInterval and FailureBurst bound the failed authentications of one source address
	// (an IPv4 address, an IPv6 /64): FailureBurst at once (default 10), then one every
	// FailureInterval (default 6s). Once they are spent, the receiver no longer reads a Secret
	// for that source; it still accepts from there the requests that carry a token it already
	// knows.
	FailureInterval time.Duration
	FailureBurst    int
	// MaxSources bounds the source addresses whose failures are remembered (default 10000);
	// when they are all still counting, a new source is treated as one that has spent its
	// failed attempts.
	MaxSources int
	// MaxRemembered bounds the accepted requests remembered for the replay check (default
	// 4096); when it is full of requests still in the window, new requests get 429.
	MaxRemembered int
	// MaxBody is the largest request body read (default 16 KiB).
	MaxBody int64
	// MaxDuration is the longest `for` a request may ask for (default DefaultMaxDuration).
	MaxDuration time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.Window <= 0 {
		l.Window = 5 * time.Minute
	}
	if l.RateInterval <= 0 {
		l.RateInterval = 6 * time.Second
	}
	if l.Burst <= 0 {
		l.Burst = 10
	}
	if l.FailureInterval <= 0 {
		l.FailureInterval = 6 * time.Second
	}
	if l.FailureBurst <= 0 {
		l.FailureBurst = 10
	}
	if l.MaxSources <= 0 {
		l.MaxSources = 10000
	}
	if l.MaxRemembered <= 0 {
		l.MaxRemembered = 4096
	}
	if l.MaxBody <= 0 {
		l.MaxBody = 16 << 10
	}
	if l.MaxDuration <= 0 {
		l.MaxDuration = DefaultMaxDuration
	}
	return l
}

// bounds are the limits the checks shared with Flux's Receiver enforce. Accepted requests are
// remembered twice the window: a timestamp up to one window ahead stays acceptable that long.
func (l Limits) bounds() webhook.Bounds {
	return webhook.Bounds{
		MaxBody: l.MaxBody, RateInterval: l.RateInterval, Burst: l.Burst,
		FailureInterval: l.FailureInterval, FailureBurst: l.FailureBurst, MaxSources: l.MaxSources,
		ReplayWindow: 2 * l.Window, MaxRemembered: l.MaxRemembered,
	}
}
