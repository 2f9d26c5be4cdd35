package postgres_test

import (
	"os"
	"testing"

	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/pgtest"
	"github.com/overseer-dev/overseer/internal/store/postgres"
	"github.com/overseer-dev/overseer/internal/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens a store on url, closed when t ends.
func open(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, pgtest.Database(t)) })
}

func TestConformanceShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		url := pgtest.Database(t)
		return open(t, url), open(t, url)
	})
}
