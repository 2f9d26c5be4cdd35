//go:build unix

package mcpshared_test

import (
	"testing"

	"github.com/overseer-dev/overseer/internal/mcpshared"
)

func TestProcessGroup(t *testing.T) {
	for _, own := range []bool{false, true} {
		_, cmd := mcpshared.Transport(&mcpshared.Server{Command: "srv"}, mcpshared.TransportOptions{ProcessGroup: own})
		if got := cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid; got != own {
			t.Errorf("ProcessGroup %v: Setpgid %v", own, got)
		}
	}
}
