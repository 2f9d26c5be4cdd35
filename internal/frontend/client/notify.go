package client

import (
	"context"
	"net/url"
	"time"
)

// NotifyTestResult is what became of `overseer notify test`'s request.
type NotifyTestResult struct {
	Channel  string `json:"channel"`
	Approval string `json:"approval"`
	Status   string `json:"status"` // approved, denied, or withdrawn when nobody answered in time
	Who      string `json:"who,omitempty"`
	Via      string `json:"via,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// NotifyTest asks the daemon to send a harmless test request to channel
// and waits, up to wait, for its answer.
func (c *Client) NotifyTest(ctx context.Context, channel string, wait time.Duration) (*NotifyTestResult, error) {
	var out NotifyTestResult
	q := url.Values{"channel": {channel}, "wait": {wait.String()}}
	err := c.do(ctx, "POST", "/api/v1/notify/test?"+q.Encode(), nil, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}
