package kernel_test

import (
	"os"
	"testing"

	"github.com/overseer-dev/overseer/internal/store/pgtest"
)

// TestMain stops the PostgreSQL cluster of the shared-store tests.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
