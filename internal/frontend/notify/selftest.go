package notify

import (
	"context"
	"errors"
	"fmt"

	"github.com/overseer-dev/overseer/internal/store"
)

// TestTool is the tool of the harmless request `overseer notify test`
// sends: it goes to the one channel tested, never to the others, and
// nothing runs whatever the answer.
const TestTool = "overseer.notify_test"

// ErrNoChannel means no channel has the name asked for.
var ErrNoChannel = errors.New("notify: no such channel")

// ChannelInfo describes a configured channel.
type ChannelInfo struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	TwoWay bool   `json:"two_way"` // it reads answers back
}

// Channels lists the configured channels.
func (n *Notifier) Channels() []ChannelInfo {
	var out []ChannelInfo
	for _, nc := range n.chans {
		out = append(out, ChannelInfo{Name: nc.name, Type: nc.typ, TwoWay: n.opts.Answerer != nil && n.twoWay(nc)})
	}
	return out
}

// NotifyChannel sends apr to the channel named name only (with an answer
// token when it is two-way).
func (n *Notifier) NotifyChannel(ctx context.Context, apr *store.Approval, name string) error {
	for _, nc := range n.chans {
		if nc.name != name {
			continue
		}
		m := MessageOf(apr)
		if n.opts.Linker != nil {
			if l, err := n.opts.Linker.Links(ctx, apr, nc.name); err == nil {
				m.Links = l
			}
		}
		if n.opts.Answerer != nil && n.twoWay(nc) {
			tok, _, err := n.opts.Answerer.AnswerToken(ctx, apr, nc.name)
			if err != nil {
				return fmt.Errorf("notify: %s: no answer token: %w", name, err)
			}
			m.AnswerToken = tok
		}
		return n.deliver(ctx, nc, m)
	}
	return fmt.Errorf("%w: %q", ErrNoChannel, name)
}
