package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/overseer-dev/overseer/internal/guard/egress"
	"github.com/overseer-dev/overseer/internal/store"
)

// FleetNS is the state namespace of what the instances sharing a database
// must agree on; its key EgressKeyID holds the name of the egress guard's
// fingerprint key (egress.KeyID).
const (
	FleetNS     = "fleet"
	EgressKeyID = "egress.key"
)

// EgressKeyFile is the egress guard's fingerprint key in Overseer's home:
// the instances of a fleet need the same one (docs/deploy.md).
const EgressKeyFile = egress.KeyFile

// ErrEgressKey is returned by Open when the instance's egress key is not
// the one the other instances of its shared database use.
var ErrEgressKey = errors.New("this instance's " + egress.KeyFile + " is not the one the other instances sharing the database use")

// checkEgressKey makes sure that this instance fingerprints secrets with
// the fleet's key. A session's memory of the secrets it read is in the
// shared database as fingerprints keyed with the egress key of the
// instance that judged the read: under another key they find nothing, so
// a secret read through one instance and sent through a second to a
// destination the flow check lets through (a known host) went unseen.
// The first instance records its key's name; one with another key does
// not start.
func (k *Kernel) checkEgressKey(ctx context.Context) error {
	id, err := egress.KeyID(k.Home)
	if err != nil {
		return fmt.Errorf("the egress guard's key: %w", err)
	}
	want, _ := json.Marshal(id)
	check := func(old []byte) ([]byte, error) {
		if old == nil {
			return want, nil
		}
		var have string
		if json.Unmarshal(old, &have) != nil || have != id {
			return nil, fmt.Errorf("%w: copy %s from an instance's home to this one's (docs/deploy.md)", ErrEgressKey, egress.KeyFile)
		}
		return old, nil
	}
	// Recorded already (every start but the fleet's first): a read.
	if old, err := k.raw.GetState(ctx, FleetNS, EgressKeyID); err == nil {
		_, err = check(old)
		return err
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("reading the fleet's egress key: %w", err)
	}
	return k.raw.UpdateState(ctx, FleetNS, EgressKeyID, check)
}
