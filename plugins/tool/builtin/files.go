package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/overseer-dev/overseer/internal/guard/paths"
	"github.com/overseer-dev/overseer/plugin"
)

// resolve returns the real path a call's file_path leads to, resolved as
// the paths guard resolved it when it judged the call.
func (t *Tools) resolve(c plugin.Call, p string) (string, error) {
	if p == "" {
		return "", errors.New("file_path is empty")
	}
	return paths.Resolve(t.cfg.Home, c.Cwd, p)
}

// loadFile reads a whole regular file (at most MaxReadBytes). The open
// does not block: a named pipe at p would otherwise wait for a writer.
func loadFile(p string) ([]byte, fs.FileInfo, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		return nil, nil, fmt.Errorf("%s is a directory", p)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(b) > MaxReadBytes {
		return nil, nil, fmt.Errorf("%s is larger than %d bytes", p, MaxReadBytes)
	}
	return b, fi, nil
}

// record notes that the session has seen (read or written) the file's
// current content, when the kernel asked for read tracking.
func record(ctx context.Context, p string, full bool) error {
	tr, ok := paths.TrackingFrom(ctx)
	if !ok {
		return nil
	}
	h, mt, err := paths.HashFile(p)
	if err != nil {
		return err
	}
	return tr.Reads.RecordRead(ctx, tr.Session, p, full, mt, h)
}

type readArgs struct {
	FilePath string      `json:"file_path"`
	Offset   json.Number `json:"offset,omitempty"`
	Limit    json.Number `json:"limit,omitempty"`
}

func positive(n json.Number, name string) (int, error) {
	if n == "" {
		return 0, nil
	}
	v, err := n.Int64()
	if err != nil || v < 1 || v > 1<<31 {
		return 0, fmt.Errorf("%s must be a positive whole number", name)
	}
	return int(v), nil
}

func (t *Tools) fileRead(ctx context.Context, c plugin.Call) (plugin.Result, error) {
	var args readArgs
	if err := decodeArgs(c.Args, &args); err != nil {
		return plugin.Result{}, err
	}
	offset, err := positive(args.Offset, "offset")
	if err != nil {
		return plugin.Result{}, err
	}
	limit, err := positive(args.Limit, "limit")
	if err != nil {
		return plugin.Result{}, err
	}
	p, err := t.resolve(c, args.FilePath)
	if err != nil {
		return plugin.Result{}, err
	}
	b, _, err := loadFile(p)
	if err != nil {
		return plugin.Result{}, err
	}
	meta := map[string]any{"path": p, "bytes": len(b)}
	if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
		return plugin.Result{Output: fmt.Sprintf("%s is a binary file (%d bytes); it is not shown", p, len(b)), Meta: meta, IsError: true}, nil
	}
	text := string(b)
	partial := offset > 0 || limit > 0
	if partial {
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		meta["total_lines"] = len(lines)
		start := max(offset, 1) - 1
		if start > len(lines) {
			start = len(lines)
		}
		end := len(lines)
		if limit > 0 && start+limit < end {
			end = start + limit
		}
		text = strings.Join(lines[start:end], "")
		meta["first_line"], meta["lines"] = start+1, end-start
	}
	out := capOutput(text, t.cfg.MaxOutputBytes, meta)
	full := !partial && meta["truncated"] == nil
	if err := record(ctx, p, full); err != nil {
		return plugin.Result{}, fmt.Errorf("recording the read: %w", err)
	}
	if !full {
		meta["partial"] = true
	}
	if out == "" {
		out = "(empty)"
		if partial {
			out = "(no lines in this range)"
		}
	}
	return plugin.Result{Output: out, Meta: meta}, nil
}

type writeArgs struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

// writeFile replaces p's content atomically: a temporary file in the same
// directory, renamed over p. An existing file keeps its permissions.
func writeFile(p string, content []byte) error {
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(p); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", p)
		}
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(content)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

func (t *Tools) fileWrite(ctx context.Context, c plugin.Call) (plugin.Result, error) {
	var args writeArgs
	if err := decodeArgs(c.Args, &args); err != nil {
		return plugin.Result{}, err
	}
	p, err := t.resolve(c, args.FilePath)
	if err != nil {
		return plugin.Result{}, err
	}
	_, statErr := os.Stat(p)
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := writeFile(p, []byte(args.Content)); err != nil {
		return plugin.Result{}, err
	}
	if err := record(ctx, p, true); err != nil {
		return plugin.Result{}, fmt.Errorf("the file was written, but recording it failed: %w", err)
	}
	verb := "Wrote"
	if created {
		verb = "Created"
	}
	return plugin.Result{Output: fmt.Sprintf("%s %s (%d bytes)", verb, p, len(args.Content)),
		Meta: map[string]any{"path": p, "bytes": len(args.Content), "created": created}}, nil
}

type editArgs struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

func (t *Tools) fileEdit(ctx context.Context, c plugin.Call) (plugin.Result, error) {
	var args editArgs
	if err := decodeArgs(c.Args, &args); err != nil {
		return plugin.Result{}, err
	}
	if args.OldString == "" {
		return plugin.Result{}, errors.New("old_string is empty; to create a file use file_write")
	}
	if args.OldString == args.NewString {
		return plugin.Result{}, errors.New("old_string and new_string are the same; nothing to change")
	}
	p, err := t.resolve(c, args.FilePath)
	if err != nil {
		return plugin.Result{}, err
	}
	b, _, err := loadFile(p)
	if err != nil {
		return plugin.Result{}, err
	}
	// The firewall checked that the session read this content; if the file
	// changed in the moment since, the edit would be made blind.
	if tr, ok := paths.TrackingFrom(ctx); ok {
		ri, found, err := tr.Reads.LastRead(ctx, tr.Session, p)
		if err != nil {
			return plugin.Result{}, fmt.Errorf("cannot check what you read of %s: %w", p, err)
		}
		if found && ri.Hash != paths.HashBytes(b) {
			return plugin.Result{}, fmt.Errorf("%s changed since you read it: read it again, then edit it", p)
		}
	}
	text := string(b)
	n := strings.Count(text, args.OldString)
	switch {
	case n == 0:
		return plugin.Result{}, fmt.Errorf("old_string was not found in %s; read the file and copy the text exactly (whitespace included)", p)
	case n > 1 && !args.ReplaceAll:
		return plugin.Result{}, fmt.Errorf("old_string occurs %d times in %s; include more surrounding text to make it unique, or set replace_all", n, p)
	}
	if args.ReplaceAll {
		text = strings.ReplaceAll(text, args.OldString, args.NewString)
	} else {
		text = strings.Replace(text, args.OldString, args.NewString, 1)
	}
	if err := writeFile(p, []byte(text)); err != nil {
		return plugin.Result{}, err
	}
	if err := record(ctx, p, true); err != nil {
		return plugin.Result{}, fmt.Errorf("the file was edited, but recording it failed: %w", err)
	}
	return plugin.Result{Output: fmt.Sprintf("Edited %s: %d replacement(s)", p, n),
		Meta: map[string]any{"path": p, "replacements": n}}, nil
}
