// Package archive lists the members of a tar or zip archive on disk — the
// names it writes, its links, and the content of the members a caller asks
// for — so that a guard can judge what unpacking it writes before it runs.
//
// Tar archives are read plain or compressed with gzip or bzip2 (the
// standard library's decompressors); xz, zstd, lzma and lz4 are recognised
// and refused (ErrUnreadable): a listing that cannot be made is the
// caller's to treat as "not known", never as "nothing". Every listing is
// bounded: members, bytes read after decompression, time, and the bytes
// kept of the members asked for. Reaching a bound is ErrBound.
package archive

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"strings"
	"time"
)

// Errors.
var (
	ErrUnreadable = errors.New("archive: not an archive this reader lists")
	ErrBound      = errors.New("archive: the listing reached its bound")
)

// Limits bound one listing.
type Limits struct {
	Members  int           // members listed
	Bytes    int64         // bytes read after decompression
	Budget   time.Duration // time spent
	KeepData int64         // bytes kept of one member's content
	// Want reports whether a member's content is kept (nil: none).
	Want func(name string) bool
	// IgnoreZeros reads past the end-of-archive blocks, as tar -i
	// (--ignore-zeros) does: a second archive appended after them is
	// unpacked too.
	IgnoreZeros bool
}

// DefaultLimits are the bounds a guard uses.
var DefaultLimits = Limits{Members: 20000, Bytes: 256 << 20, Budget: 500 * time.Millisecond, KeepData: 256 << 10}

// Kind is what a member is.
type Kind byte

const (
	File     Kind = 'f'
	Dir      Kind = 'd'
	Symlink  Kind = 'l'
	Hardlink Kind = 'h'
	Other    Kind = 'o' // a device, a pipe …
)

// Member is one member of an archive.
type Member struct {
	Name string // as stored
	Kind Kind
	Link string // a link's target, as stored
	Data []byte // the content, when asked for and complete
	Kept bool   // Data holds the whole content
}

// counter bounds the bytes read and the time spent.
type counter struct {
	r        io.Reader
	n, max   int64
	deadline time.Time
}

func (c *counter) Read(p []byte) (int, error) {
	if time.Now().After(c.deadline) {
		return 0, fmt.Errorf("%w: time", ErrBound)
	}
	if c.n >= c.max {
		return 0, fmt.Errorf("%w: %d bytes", ErrBound, c.max)
	}
	if int64(len(p)) > c.max-c.n {
		p = p[:c.max-c.n]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Format names what the first bytes of a file are: "gzip", "bzip2",
// "xz", "zstd", "lzma", "lz4", "zip", "tar" or "".
func Format(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return "gzip"
	case bytes.HasPrefix(head, []byte("BZh")):
		return "bzip2"
	case bytes.HasPrefix(head, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return "xz"
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return "zstd"
	case bytes.HasPrefix(head, []byte{0x04, 0x22, 0x4d, 0x18}):
		return "lz4"
	case bytes.HasPrefix(head, []byte{0x5d, 0, 0}):
		return "lzma"
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return "zip"
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return "tar"
	}
	return ""
}

// Tar lists a tar archive read from r, decompressing gzip and bzip2.
func Tar(r io.Reader, lim Limits) ([]Member, error) {
	c := &counter{r: r, max: lim.Bytes, deadline: time.Now().Add(lim.Budget)}
	br := bufio.NewReader(r)
	head, _ := br.Peek(512)
	var in io.Reader = br
	switch f := Format(head); f {
	case "gzip":
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		defer z.Close()
		in = z
	case "bzip2":
		in = bzip2.NewReader(br)
	case "xz", "zstd", "lz4", "lzma", "zip":
		return nil, fmt.Errorf("%w: %s", ErrUnreadable, f)
	case "tar":
	default:
		// An old (v7) tar has no magic: tar's reader says.
	}
	c.r = in
	tr := tar.NewReader(c)
	var out []Member
	for {
		h, err := tr.Next()
		if err == io.EOF && lim.IgnoreZeros {
			// tar -i: zero blocks are skipped, and what follows them is
			// read as more members.
			blk := make([]byte, 512)
			for {
				n, rerr := io.ReadFull(c, blk)
				if rerr == io.EOF || rerr == io.ErrUnexpectedEOF && allZero(blk[:n]) {
					break
				}
				if rerr != nil {
					if errors.Is(rerr, ErrBound) {
						return out, rerr
					}
					return out, fmt.Errorf("%w: %v", ErrUnreadable, rerr)
				}
				if !allZero(blk) {
					tr = tar.NewReader(io.MultiReader(bytes.NewReader(blk), c))
					h, err = tr.Next()
					break
				}
			}
		}
		if err == io.EOF {
			if len(out) == 0 {
				return nil, fmt.Errorf("%w: no members", ErrUnreadable)
			}
			return out, nil
		}
		if err != nil {
			if errors.Is(err, ErrBound) {
				return out, err
			}
			return out, fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		if len(out) >= lim.Members {
			return out, fmt.Errorf("%w: more than %d members", ErrBound, lim.Members)
		}
		m := Member{Name: h.Name, Link: h.Linkname}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeRegA, tar.TypeCont, tar.TypeGNUSparse:
			m.Kind = File
		case tar.TypeDir:
			m.Kind = Dir
		case tar.TypeSymlink:
			m.Kind = Symlink
		case tar.TypeLink:
			m.Kind = Hardlink
		default:
			m.Kind = Other
		}
		if m.Kind == File && lim.Want != nil && lim.Want(h.Name) && h.Size <= lim.KeepData {
			b, err := io.ReadAll(io.LimitReader(tr, lim.KeepData+1))
			if err != nil {
				return out, fmt.Errorf("%w: %v", ErrUnreadable, err)
			}
			m.Data, m.Kept = b, int64(len(b)) == h.Size
		}
		out = append(out, m)
	}
}

// Zip lists a zip archive of size bytes read through ra. The central
// directory's count is checked before it is read.
func Zip(ra io.ReaderAt, size int64, lim Limits) ([]Member, error) {
	n, err := zipCount(ra, size)
	if err != nil {
		return nil, err
	}
	if n > lim.Members {
		return nil, fmt.Errorf("%w: %d members", ErrBound, n)
	}
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	deadline := time.Now().Add(lim.Budget)
	var out []Member
	var read int64
	for _, f := range zr.File {
		if time.Now().After(deadline) {
			return out, fmt.Errorf("%w: time", ErrBound)
		}
		m := Member{Name: unicodePath(f), Kind: File}
		mode := f.Mode()
		switch {
		case mode.IsDir() || strings.HasSuffix(f.Name, "/"):
			m.Kind = Dir
		case mode&fs.ModeSymlink != 0:
			m.Kind = Symlink
		case mode.Type() != 0:
			m.Kind = Other
		}
		wantData := m.Kind == Symlink || m.Kind == File && lim.Want != nil && lim.Want(m.Name)
		if wantData && f.UncompressedSize64 <= uint64(lim.KeepData) {
			if read += int64(f.UncompressedSize64); read > lim.Bytes {
				return out, fmt.Errorf("%w: %d bytes", ErrBound, lim.Bytes)
			}
			rc, err := f.Open()
			if err != nil {
				return out, fmt.Errorf("%w: %v", ErrUnreadable, err)
			}
			b, err := io.ReadAll(io.LimitReader(rc, lim.KeepData+1))
			rc.Close()
			if err != nil {
				return out, fmt.Errorf("%w: %v", ErrUnreadable, err)
			}
			if m.Kind == Symlink {
				m.Link = string(b) // a link's target is its content
			} else {
				m.Data, m.Kept = b, uint64(len(b)) == f.UncompressedSize64
			}
		} else if m.Kind == Symlink {
			return out, fmt.Errorf("%w: a link's target too long", ErrUnreadable)
		}
		out = append(out, m)
	}
	return out, nil
}

// unicodePath returns the name unzip writes a zip entry under: the Info-ZIP
// Unicode Path extra field's (0x7075, version 1) when its checksum matches
// the header's name, as unzip and Python's zipfile read it in place of
// the name, or the name.
func unicodePath(f *zip.File) string {
	ex := f.Extra
	for len(ex) >= 4 {
		tag, size := binary.LittleEndian.Uint16(ex), int(binary.LittleEndian.Uint16(ex[2:]))
		if 4+size > len(ex) {
			break
		}
		body := ex[4 : 4+size]
		if tag == 0x7075 && size >= 5 && body[0] == 1 &&
			binary.LittleEndian.Uint32(body[1:]) == crc32.ChecksumIEEE([]byte(f.Name)) {
			return string(body[5:])
		}
		ex = ex[4+size:]
	}
	return f.Name
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// zipCount reads the number of entries of a zip's end of central
// directory record (the ZIP64 one when the record says so).
func zipCount(ra io.ReaderAt, size int64) (int, error) {
	const eocdLen = 22
	if size < eocdLen {
		return 0, fmt.Errorf("%w: too short for a zip", ErrUnreadable)
	}
	tail := min(size, 65535+eocdLen)
	buf := make([]byte, tail)
	if _, err := ra.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return 0, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || i+eocdLen > len(buf) {
		return 0, fmt.Errorf("%w: no end of central directory", ErrUnreadable)
	}
	n := int(binary.LittleEndian.Uint16(buf[i+10:]))
	if n != 0xffff {
		return n, nil
	}
	// ZIP64: the locator is just before the record.
	if i < 20 || string(buf[i-20:i-16]) != "PK\x06\x07" {
		return 0, fmt.Errorf("%w: a ZIP64 count without its locator", ErrUnreadable)
	}
	off := int64(binary.LittleEndian.Uint64(buf[i-20+8:]))
	rec := make([]byte, 56)
	if off < 0 || off+56 > size {
		return 0, fmt.Errorf("%w: ZIP64 record offset", ErrUnreadable)
	}
	if _, err := ra.ReadAt(rec, off); err != nil || string(rec[:4]) != "PK\x06\x06" {
		return 0, fmt.Errorf("%w: ZIP64 record", ErrUnreadable)
	}
	c := binary.LittleEndian.Uint64(rec[32:])
	if c > 1<<31 {
		return 1 << 31, nil
	}
	return int(c), nil
}
