//go:build unix && !linux

package hookcore

import "errors"

func memfd() (int, error) { return -1, errors.New("no anonymous memory files here") }

func seal(int) error { return errors.New("no anonymous memory files here") }
