// Command pgcluster runs a throwaway PostgreSQL server for bench/run.sh:
// it starts one in a temporary directory (internal/store/pgtest, with
// fsync on, as a real server runs), creates an empty database, prints its
// URL on one line, and stops the server and removes its files when it is
// sent SIGTERM or SIGINT.
//
//	pgcluster >url.txt & pid=$!   # …use $(cat url.txt)…; kill -TERM $pid; wait $pid
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/overseer-dev/overseer/internal/store/pgtest"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	c, err := pgtest.Start(pgtest.Options{Durable: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgcluster:", err)
		os.Exit(1)
	}
	defer c.Stop()
	_, url, err := c.CreateDatabase(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgcluster:", err)
		return
	}
	fmt.Println(url)
	<-sig
}
