//go:build !unix

package smallfile

import "os"

func read(path string) ([]byte, error) { return os.ReadFile(path) }
