package kernel

// Repeat detection across instances. The firewall's L2 counts a session's
// recent actions (perception.Bus, in memory); with several instances on
// one database each records only the calls it judged, so a balancer that
// spreads one session over the instances would let a loop go unnoticed.
// Each instance therefore publishes the samples it records (the tool, the
// arguments' hash, the time, the effects, the call's shape as a hash;
// nothing of the arguments themselves), in batches every sampleEvery, and
// records the others' (store.Publisher, PostgreSQL's NOTIFY): a repeat is counted by every
// instance within about sampleEvery. A batch lost (an instance's listening
// connection dropped) only makes a later stop.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/perception"
	"github.com/overseer-dev/overseer/internal/store"
)

// sampleEvery is how often an instance publishes the samples it recorded.
var sampleEvery = 50 * time.Millisecond

// changeSamples is the kind of the published batches.
const changeSamples = "samples"

// sharedSample is a sample as published: Forget drops Session's samples of
// Tool instead (a person approved a call a loop limit put to them).
type sharedSample struct {
	Session string `json:"s"`
	perception.ActionSample
	Forget bool `json:"f,omitempty"`
}

// sampleShare publishes this instance's samples.
type sampleShare struct {
	pub  store.Publisher
	id   string // this instance, to skip its own batches
	mu   sync.Mutex
	buf  []sharedSample
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// startSamples starts publishing this instance's samples when the store
// is shared.
func (k *Kernel) startSamples() {
	pub, ok := k.raw.(store.Publisher)
	if !ok || !k.shared {
		return
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	k.samples = &sampleShare{pub: pub, id: hex.EncodeToString(id[:]), stop: make(chan struct{}), done: make(chan struct{})}
	go k.samples.run()
}

// stopSamples publishes what is left and stops.
func (k *Kernel) stopSamples() {
	if k.samples == nil {
		return
	}
	k.samples.once.Do(func() { close(k.samples.stop) }) // Close may be called more than once
	<-k.samples.done
}

// shareSample queues a sample (or a forget) for publishing.
func (k *Kernel) shareSample(s sharedSample) {
	if k.samples == nil {
		return
	}
	k.samples.mu.Lock()
	if len(k.samples.buf) < 100000 { // bounded: past it, samples are only local
		k.samples.buf = append(k.samples.buf, s)
	}
	k.samples.mu.Unlock()
}

func (s *sampleShare) run() {
	defer close(s.done)
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			s.publish()
			return
		case <-t.C:
			s.publish()
		}
	}
}

// publish sends the queued samples, in payloads under store.MaxPublish
// (each sample encoded once, as many in a payload as fit; one too large
// alone is left out), up to publishPayloads payloads in one Publish.
func (s *sampleShare) publish() {
	s.mu.Lock()
	buf := s.buf
	s.buf = nil
	s.mu.Unlock()
	if len(buf) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	prefix := s.id + "|"
	var (
		payloads []string
		cur      []byte
	)
	send := func() {
		_ = s.pub.Publish(ctx, changeSamples, payloads...) // lost: only a later stop
		payloads = payloads[:0]
	}
	end := func() {
		if len(cur) > 0 {
			payloads = append(payloads, string(append(cur, ']')))
			cur = cur[:0]
			if len(payloads) == publishPayloads {
				send()
			}
		}
	}
	for i := range buf {
		b, err := json.Marshal(&buf[i])
		if err != nil || len(prefix)+len(b)+2 > store.MaxPublish {
			continue
		}
		if len(cur) > 0 && len(cur)+1+len(b)+1 > store.MaxPublish {
			end()
		}
		if len(cur) == 0 {
			cur = append(append(cur, prefix...), '[')
		} else {
			cur = append(cur, ',')
		}
		cur = append(cur, b...)
	}
	end()
	if len(payloads) > 0 {
		send()
	}
}

// publishPayloads is the most payloads one Publish carries.
const publishPayloads = 64

// takeSamples records the samples another instance published.
func (k *Kernel) takeSamples(payload string) {
	from, body, ok := strings.Cut(payload, "|")
	if !ok || k.samples == nil || from == k.samples.id {
		return
	}
	var list []sharedSample
	if json.Unmarshal([]byte(body), &list) != nil {
		return
	}
	for _, s := range list {
		if s.Session == "" {
			continue
		}
		if s.Forget {
			k.Bus.ForgetTool(s.Session, s.Tool)
			continue
		}
		k.Bus.RecordSampleAt(s.Session, s.ActionSample)
	}
}
