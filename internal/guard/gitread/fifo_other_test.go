//go:build !unix

package gitread

import "errors"

func mkfifo(string) error { return errors.New("no named pipes here") }
