package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"
)

func sampleTar(t testing.TB, gz bool) []byte {
	var buf bytes.Buffer
	var z *gzip.Writer
	var w *tar.Writer
	if gz {
		z = gzip.NewWriter(&buf)
		w = tar.NewWriter(z)
	} else {
		w = tar.NewWriter(&buf)
	}
	w.WriteHeader(&tar.Header{Name: ".claude/settings.json", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	w.Write([]byte("{}"))
	w.WriteHeader(&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"})
	w.Close()
	if z != nil {
		z.Close()
	}
	return buf.Bytes()
}

func TestListsAndBounds(t *testing.T) {
	for _, gz := range []bool{false, true} {
		ms, err := Tar(bytes.NewReader(sampleTar(t, gz)), Limits{Members: 10, Bytes: 1 << 20, Budget: time.Second, KeepData: 10,
			Want: func(n string) bool { return strings.HasSuffix(n, ".json") }})
		if err != nil || len(ms) != 2 || string(ms[0].Data) != "{}" || !ms[0].Kept || ms[1].Kind != Symlink || ms[1].Link != "/etc" {
			t.Fatalf("gz=%v: %+v %v", gz, ms, err)
		}
		// One member allowed: the listing is cut short, and says so.
		if _, err := Tar(bytes.NewReader(sampleTar(t, gz)), Limits{Members: 1, Bytes: 1 << 20, Budget: time.Second}); !errors.Is(err, ErrBound) {
			t.Fatalf("gz=%v: a listing past its member bound: %v", gz, err)
		}
	}
	// A bomb: more bytes after decompression than the bound.
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	w := tar.NewWriter(z)
	w.WriteHeader(&tar.Header{Name: "big", Mode: 0o644, Size: 8 << 20, Typeflag: tar.TypeReg})
	w.Write(make([]byte, 8<<20))
	w.Close()
	z.Close()
	if _, err := Tar(bytes.NewReader(buf.Bytes()), Limits{Members: 10, Bytes: 1 << 20, Budget: time.Second}); !errors.Is(err, ErrBound) {
		t.Fatalf("a listing past its byte bound: %v", err)
	}
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for i := 0; i < 5; i++ {
		zw.Create("f" + string(rune('a'+i)))
	}
	zw.Close()
	if _, err := Zip(bytes.NewReader(zb.Bytes()), int64(zb.Len()), Limits{Members: 3, Bytes: 1 << 20, Budget: time.Second}); !errors.Is(err, ErrBound) {
		t.Fatalf("a zip past its member bound: %v", err)
	}
	if ms, err := Zip(bytes.NewReader(zb.Bytes()), int64(zb.Len()), DefaultLimits); err != nil || len(ms) != 5 {
		t.Fatalf("zip: %v %v", ms, err)
	}
	if _, err := Tar(bytes.NewReader(append([]byte{0x28, 0xb5, 0x2f, 0xfd}, make([]byte, 600)...)), DefaultLimits); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("zstd: %v", err)
	}
}

func FuzzList(f *testing.F) {
	f.Add(sampleTar(f, false))
	f.Add(sampleTar(f, true))
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create(".claude/settings.json")
	w.Write([]byte("{}"))
	zw.Close()
	f.Add(zb.Bytes())
	lim := Limits{Members: 100, Bytes: 1 << 20, Budget: 200 * time.Millisecond, KeepData: 1 << 10, Want: func(string) bool { return true }}
	f.Fuzz(func(t *testing.T, b []byte) {
		if ms, err := Tar(bytes.NewReader(b), lim); len(ms) > lim.Members || err == nil && len(ms) == 0 {
			t.Fatalf("tar: %d members, %v", len(ms), err)
		}
		if ms, err := Zip(bytes.NewReader(b), int64(len(b)), lim); len(ms) > lim.Members || err == nil && len(ms) > 0 && len(ms[0].Data) > int(lim.KeepData)+1 {
			t.Fatalf("zip: %d members, %v", len(ms), err)
		}
	})
}

// TestIgnoreZerosAndUnicodePath: tar -i reads an archive appended after the
// end blocks (and the padding of zeros between), and a zip entry's Info-ZIP
// Unicode Path field is the name unzip writes.
func TestIgnoreZerosAndUnicodePath(t *testing.T) {
	one := func(name string) []byte {
		var buf bytes.Buffer
		w := tar.NewWriter(&buf)
		w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		w.Write([]byte("x"))
		w.Close()
		return buf.Bytes()
	}
	cat := append(append(one("a.go"), make([]byte, 4096)...), one(".claude/settings.json")...)
	lim := Limits{Members: 10, Bytes: 1 << 20, Budget: time.Second}
	ms, err := Tar(bytes.NewReader(cat), lim)
	if err != nil || len(ms) != 1 {
		t.Fatalf("without -i: %+v %v", ms, err)
	}
	lim.IgnoreZeros = true
	ms, err = Tar(bytes.NewReader(cat), lim)
	if err != nil || len(ms) != 2 || ms[1].Name != ".claude/settings.json" {
		t.Fatalf("with -i: %+v %v", ms, err)
	}
	ms, err = Tar(bytes.NewReader(one("a.go")), lim)
	if err != nil || len(ms) != 1 {
		t.Fatalf("with -i, one archive: %+v %v", ms, err)
	}
	for _, c := range []struct{ header, field, want string }{
		{"README.md", ".claude/settings.json", ".claude/settings.json"},
		{"README.md", "README.md", "README.md"},
		{"OTHER.md", "", "OTHER.md"}, // a field whose checksum is another name's: unzip ignores it
	} {
		var buf bytes.Buffer
		w := zip.NewWriter(&buf)
		var ex []byte
		if c.field != "" {
			ex = []byte{0x75, 0x70, byte(5 + len(c.field)), 0, 1}
			sum := crc32.ChecksumIEEE([]byte(c.header))
			ex = append(ex, byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24))
			ex = append(ex, c.field...)
		} else {
			ex = []byte{0x75, 0x70, 5 + 9, 0, 1, 1, 2, 3, 4}
			ex = append(ex, ".claude/x"...)
		}
		f, _ := w.CreateHeader(&zip.FileHeader{Name: c.header, Extra: ex})
		f.Write([]byte("x"))
		w.Close()
		ms, err := Zip(bytes.NewReader(buf.Bytes()), int64(buf.Len()), lim)
		if err != nil || len(ms) != 1 || ms[0].Name != c.want {
			t.Errorf("%s/%s: %+v %v", c.header, c.field, ms, err)
		}
	}
}
