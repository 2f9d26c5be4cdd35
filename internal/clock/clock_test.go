package clock

import (
	"testing"
	"time"
)

func TestFake(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(t0)
	a := f.After(time.Minute)
	b := f.After(2 * time.Minute)
	if f.Waiters() != 2 {
		t.Fatalf("waiters = %d", f.Waiters())
	}
	f.Advance(90 * time.Second)
	select {
	case got := <-a:
		if !got.Equal(t0.Add(90 * time.Second)) {
			t.Fatalf("fired at %v", got)
		}
	default:
		t.Fatal("the one-minute timer did not fire")
	}
	select {
	case <-b:
		t.Fatal("the two-minute timer fired early")
	default:
	}
	f.Advance(time.Minute)
	<-b
	if f.Waiters() != 0 || !f.Now().Equal(t0.Add(150*time.Second)) {
		t.Fatalf("after: %d waiters, now %v", f.Waiters(), f.Now())
	}
	select {
	case <-f.After(0):
	default:
		t.Fatal("After(0) must fire at once")
	}
}

func TestShifted(t *testing.T) {
	at := time.Date(2031, 3, 4, 23, 0, 0, 0, time.UTC)
	s := StartingAt(at)
	if d := s.Now().Sub(at); d < 0 || d > time.Minute {
		t.Fatalf("StartingAt(%v).Now() = %v", at, s.Now())
	}
	a, b := s.Now(), s.Now()
	if b.Before(a) {
		t.Fatal("a shifted clock went back")
	}
}
